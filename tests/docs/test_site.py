"""The documentation site builds with MkDocs in strict mode: no warning at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import ROOT

import rota
from backends import IN_CI

MKDOCS = Path(sys.executable).with_name("mkdocs")


def test_site_builds_in_strict_mode(tmp_path: Path) -> None:
    if not MKDOCS.exists():
        if IN_CI:
            pytest.fail(
                "mkdocs is not installed (CI=true: must not skip); pip install -e '.[docs]'"
            )
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]'")
    site = tmp_path / "site"
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    reference = (site / "reference" / "index.html").read_text()
    missing = [
        name
        for name in rota.__all__
        if not name.startswith("_") and name != "errors" and f'id="rota.{name}"' not in reference
    ]
    assert missing == [], f"public names missing from the API reference: {missing}"
    pages = {path.stem for path in (ROOT / "docs").glob("*.md")} - {"index"}
    built = {path.parent.name for path in site.glob("*/index.html")}
    assert pages <= built, f"pages not built: {pages - built}"
