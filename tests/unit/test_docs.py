"""The documentation matches the code: the command table is the registry's, the README is a front door, and
every page it links to exists."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import command_reference  # noqa: E402 - scripts/ is not a package
import module_map  # noqa: E402


def test_the_command_table_of_docs_repl_is_the_registrys():
    page = command_reference.PAGE.read_text()
    assert page == command_reference.page_with_table(page), "docs/repl.md is stale: run make docs"
    assert "| `:peek NAME [N]" in page


def test_the_module_list_of_docs_architecture_is_the_package_s():
    page = module_map.PAGE.read_text()
    assert page == module_map.page_with_map(page), "docs/architecture.md's module list is stale: run make docs"
    assert "- `delete_guard.py`: Every delete and overwrite sparkscope makes goes through here" in page


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for heading in ("## Install and run", "## A first session", "## The SDK", "## Learn more"):
        assert heading in readme


def test_every_local_link_in_the_docs_leads_somewhere():
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "benchmarks" / "README.md",
             *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not target.startswith(("http://", "https://")) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []
