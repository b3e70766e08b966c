/*
 * How rows reach a feed (Feeds.java): the client writes a batch DataFrame of them with this format, option feed=NAME,
 * and the write's commit adds them as one batch. Its writer tasks are Spark's own memory-sink writers, and the rows
 * travel from the client through Spark Connect, as any createDataFrame's do. Only the feed's owner writes it.
 * Control.java makes and forgets feeds.
 */
package sparkscope.v3.feed;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.execution.streaming.sources.MemoryWriterCommitMessage;
import org.apache.spark.sql.execution.streaming.sources.MemoryWriterFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Function1;
import scala.jdk.javaapi.CollectionConverters;

public final class FeedWriter implements TableProvider {
    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return (StructType) Feeds.get(Feeds.name(options), false).apply(new Object[] {"schema"});
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        String name = Feeds.name(properties);
        Feeds.get(name, false);
        return new FeedTable(name, schema);
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;  // a write gives the DataFrame's own schema
    }

    static final class FeedTable implements Table, SupportsWrite {
        private final String name;
        private final StructType schema;

        FeedTable(String name, StructType schema) {
            this.name = name;
            this.schema = schema;
        }

        @Override
        public String name() {
            return "sparkscope-feed[" + name + "]";
        }

        @Override
        @SuppressWarnings("deprecation")
        public StructType schema() {
            return schema;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.ACCEPT_ANY_SCHEMA);
        }

        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            Feeds.get(name, true);  // the write's own operation: its caller is known
            StructType written = info.schema();
            return new WriteBuilder() {
                @Override
                public Write build() {
                    return new Write() {
                        @Override
                        public BatchWrite toBatch() {
                            return new FeedWrite(name, written);
                        }
                    };
                }
            };
        }
    }

    static final class FeedWrite implements BatchWrite {
        private final String name;
        private final StructType schema;

        FeedWrite(String name, StructType schema) {
            this.name = name;
            this.schema = schema;
        }

        @Override
        public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
            return new MemoryWriterFactory(schema);  // Spark's own: what runs in the tasks is Spark's
        }

        @Override
        public boolean useCommitCoordinator() {
            return false;
        }

        @Override
        public void commit(WriterCommitMessage[] messages) {
            Function1<Object, Object> toSpark = CatalystTypeConverters.createToCatalystConverter(schema);
            UnsafeProjection compact = UnsafeProjection.create(schema);  // a row's exact bytes, counted as it is kept
            List<InternalRow> rows = new ArrayList<>();
            for (WriterCommitMessage message : messages) {
                if (message instanceof MemoryWriterCommitMessage) {
                    for (Row row : CollectionConverters.asJava(((MemoryWriterCommitMessage) message).data())) {
                        rows.add(compact.apply((InternalRow) toSpark.apply(row)).copy());
                    }
                }
            }
            Feeds.get(name, false).apply(new Object[] {"add", rows.toArray(new InternalRow[0])});
        }

        @Override
        public void abort(WriterCommitMessage[] messages) {
            // nothing was added: a batch reaches its feed only in the commit
        }
    }
}
