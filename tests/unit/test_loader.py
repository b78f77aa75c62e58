"""rota._loader.load_app: both spec forms, stable task names, precise errors."""

from __future__ import annotations

import runpy
import sys
import textwrap
from pathlib import Path

import pytest

from rota import App, InvalidArgument
from rota._loader import load_app

pytestmark = pytest.mark.usefixtures("isolated_imports")

DEMO = """
    import rota

    app = rota.App("sqlite:///unused.db")
    other = rota.App("sqlite:///other.db")

    @app.task
    def add(a, b):
        return a + b

    @app.task(name="crawl.fetch")
    def fetch(url):
        return url

    class Jobs:
        @app.task
        def nightly():
            return "done"

    def helper():
        return None
"""


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return write(tmp_path / "apps" / "rota_demo_app.py", DEMO)


def names(app: App) -> list[str]:
    return sorted(app.tasks)


EXPECTED = ["Jobs.nightly", "add", "crawl.fetch"]


def test_file_spec_loads_the_app_as_a_module_named_after_the_stem(demo: Path) -> None:
    app = load_app(f"{demo}:app")
    assert isinstance(app, App)
    assert names(app) == EXPECTED
    module = sys.modules["rota_demo_app"]
    assert module.app is app
    assert str(demo.parent) == sys.path[0]
    assert app.tasks["add"](2, 3) == 5


def test_module_spec_loads_from_the_current_directory(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(demo.parent)
    app = load_app("rota_demo_app:app")
    assert names(app) == EXPECTED
    assert sys.modules["rota_demo_app"].app is app


def test_task_names_do_not_depend_on_how_the_module_is_loaded(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_file = names(load_app(f"{demo}:app"))
    del sys.modules["rota_demo_app"]
    monkeypatch.chdir(demo.parent)
    by_module = names(load_app("rota_demo_app:app"))
    # Run as a script (``python demo.py``): the module is then ``__main__``.
    as_script = runpy.run_path(str(demo), run_name="__main__")["app"]
    assert as_script.tasks["add"].fn.__module__ == "__main__"
    assert by_file == by_module == names(as_script) == EXPECTED


def test_a_spec_without_attribute_means_app(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert names(load_app(str(demo))) == EXPECTED
    monkeypatch.chdir(demo.parent)
    assert load_app("rota_demo_app") is load_app("rota_demo_app:app")


def test_other_attributes_and_dotted_attributes(tmp_path: Path) -> None:
    path = write(
        tmp_path / "rota_nested_app.py",
        """
        import types
        import rota

        main = rota.App("sqlite:///x.db")
        holder = types.SimpleNamespace(app=main)
        """,
    )
    app = load_app(f"{path}:main")
    assert load_app(f"{path}:holder.app") is app


def test_package_module_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "rota_pkg_demo" / "__init__.py", "")
    write(tmp_path / "rota_pkg_demo" / "tasks.py", DEMO)
    monkeypatch.chdir(tmp_path)
    assert names(load_app("rota_pkg_demo.tasks:app")) == EXPECTED


def test_loading_the_same_file_twice_gives_the_same_app(demo: Path) -> None:
    assert load_app(f"{demo}:app") is load_app(f"{demo}:app")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match=r"app file '.*nope\.py' not found"):
        load_app(f"{tmp_path / 'nope.py'}:app")


def test_not_a_python_file(tmp_path: Path) -> None:
    path = write(tmp_path / "tasks.txt", "x = 1")
    with pytest.raises(InvalidArgument, match=r"is not a Python file \(\.py\)"):
        load_app(f"{path}:app")


def test_file_name_that_is_not_a_module_name(tmp_path: Path) -> None:
    path = write(tmp_path / "my-tasks.py", "x = 1")
    with pytest.raises(InvalidArgument, match="'my-tasks' is not a valid module name"):
        load_app(f"{path}:app")


def test_missing_module() -> None:
    with pytest.raises(InvalidArgument, match="module 'rota_no_such_module' not found"):
        load_app("rota_no_such_module:app")
    with pytest.raises(InvalidArgument, match=r"module 'rota\.no_such' not found"):
        load_app("rota.no_such:app")


def test_missing_dependency_of_the_module_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / "rota_needs_dep.py", "import rota_missing_dependency\n")
    with pytest.raises(
        InvalidArgument,
        match="importing 'rota_needs_dep' failed: no module named 'rota_missing_dependency'",
    ):
        load_app(f"{path}:app")


def test_missing_attribute_names_the_apps_that_exist(demo: Path) -> None:
    with pytest.raises(InvalidArgument) as info:
        load_app(f"{demo}:application")
    assert str(info.value) == (
        "module 'rota_demo_app' has no attribute 'application'; "
        "it has rota_demo_app:app, rota_demo_app:other"
    )


def test_missing_default_attribute(tmp_path: Path) -> None:
    path = write(tmp_path / "rota_no_app.py", "x = 1\n")
    with pytest.raises(InvalidArgument, match=r"module 'rota_no_app' has no attribute 'app'$"):
        load_app(str(path))


@pytest.mark.parametrize(
    ("attribute", "kind"), [("helper", "function"), ("add", "Task"), ("Jobs", "type")]
)
def test_attribute_that_is_not_an_app(demo: Path, attribute: str, kind: str) -> None:
    with pytest.raises(InvalidArgument, match=f"is a {kind}, not a rota App"):
        load_app(f"{demo}:{attribute}")


def test_file_shadowed_by_an_already_imported_module(tmp_path: Path) -> None:
    path = write(tmp_path / "json.py", "import rota\napp = rota.App()\n")
    with pytest.raises(InvalidArgument, match="a different module of that name is already"):
        load_app(f"{path}:app")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty app spec"),
        (":app", "names no module before ':'"),
        ("demo:", "names no attribute after ':'"),
    ],
)
def test_malformed_specs(spec: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        load_app(spec)
