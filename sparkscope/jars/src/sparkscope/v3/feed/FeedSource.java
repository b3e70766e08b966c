/*
 * A streaming DataFrame over a feed (Feeds.java): spark.readStream.format(this).option("feed", NAME).load(). Each
 * batch the client added becomes exactly one micro-batch (admission control: one batch per trigger), so a test
 * knows which rows each batch saw. A batch is a streaming DataFrame of the driver's rows (a local collection
 * parallelised: no class of this jar runs in a task).
 */
package sparkscope.v3.feed;

import java.util.Arrays;
import java.util.function.Function;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.execution.streaming.Offset;
import org.apache.spark.sql.execution.streaming.Source;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.sources.StreamSourceProvider;
import org.apache.spark.sql.types.StructType;

import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;

public final class FeedSource implements StreamSourceProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "sparkscope-feed";
    }

    @Override
    public Tuple2<String, StructType> sourceSchema(SQLContext context, Option<StructType> schema, String provider,
                                                  scala.collection.immutable.Map<String, String> parameters) {
        String name = Feeds.name(CollectionConverters.asJava(parameters));
        return new Tuple2<>("sparkscope-feed[" + name + "]",
                (StructType) Feeds.get(name, false).apply(new Object[] {"schema"}));
    }

    @Override
    public Source createSource(SQLContext context, String metadataPath, Option<StructType> schema, String provider,
                               scala.collection.immutable.Map<String, String> parameters) {
        String name = Feeds.name(CollectionConverters.asJava(parameters));
        Feeds.get(name, true).apply(new Object[] {"attach", Thread.currentThread(),  // made in the query's thread
            context.sparkContext().getLocalProperty("sql.streaming.queryId")});
        return new Batches(context, name);
    }

    /** The offset of a feed: how many of its batches a query has read. */
    static final class Position extends Offset {
        final long batches;

        Position(long batches) {
            this.batches = batches;
        }

        @Override
        public String json() {
            return String.valueOf(batches);
        }

        static long of(org.apache.spark.sql.connector.read.streaming.Offset offset) {
            return offset == null ? 0 : Long.parseLong(offset.json().trim());
        }
    }

    static final class Batches implements Source, SupportsAdmissionControl {
        private final SQLContext context;
        private final String name;

        Batches(SQLContext context, String name) {
            this.context = context;
            this.name = name;
        }

        private Function<Object[], Object> feed() {
            return Feeds.get(name, false);  // the query's own thread: its owner was checked as it started
        }

        @Override
        public String toString() {  // the source's description in a query's progress
            return "sparkscope-feed[" + name + "]";
        }

        @Override
        public StructType schema() {
            return (StructType) feed().apply(new Object[] {"schema"});
        }

        @Override
        public Option<Offset> getOffset() {
            long batches = (Long) feed().apply(new Object[] {"batches"});
            return batches == 0 ? Option.empty() : Option.apply(new Position(batches));
        }

        @Override
        public ReadLimit getDefaultReadLimit() {
            return ReadLimit.maxFiles(1);  // one added batch per micro-batch
        }

        @Override
        public org.apache.spark.sql.connector.read.streaming.Offset latestOffset(
                org.apache.spark.sql.connector.read.streaming.Offset start, ReadLimit limit) {
            long read = Position.of(start);
            long batches = (Long) feed().apply(new Object[] {"batches"});
            if (batches <= read) {
                return start;  // nothing new: no batch
            }
            return new Position(limit instanceof org.apache.spark.sql.connector.read.streaming.ReadAllAvailable
                    ? batches : read + 1);
        }

        @Override
        public Dataset<Row> getBatch(Option<Offset> start, Offset end) {
            long from = start.isDefined() ? Position.of(start.get()) : 0;
            InternalRow[] rows = (InternalRow[]) feed().apply(new Object[] {"rows", from, Position.of(end)});
            org.apache.spark.sql.classic.SparkSession session =
                    (org.apache.spark.sql.classic.SparkSession) context.sparkSession();
            RDD<InternalRow> rdd = session.sparkContext().parallelize(
                    CollectionConverters.asScala(Arrays.asList(rows)).toSeq(), 1, ClassTag$.MODULE$.apply(InternalRow.class));
            return session.internalCreateDataFrame(rdd, schema(), true);
        }

        /** Spark commits a V1 source's offsets here (its V2 commit is not called for it). */
        @Override
        public void commit(Offset end) {
            feed().apply(new Object[] {"commit", Thread.currentThread(), Position.of(end)});
        }

        @Override
        public void stop() {
        }
    }
}
