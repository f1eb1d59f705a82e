# The Python package's tests (docs/PYTHON.md): run by ctest (Python.Package) with PYTHONPATH at
# the build's python/ and TZERO_BINARY at the build's tzero, on a model that binary generates.
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def tzero_bin():
    b = os.environ.get("TZERO_BINARY")
    assert b and os.path.exists(b), "TZERO_BINARY must name the built tzero"
    return b


@pytest.fixture(scope="session")
def model_path(tmp_path_factory, tzero_bin):
    path = str(tmp_path_factory.mktemp("models") / "tiny-q8_0.gguf")
    subprocess.run([tzero_bin, "gen-model", "--preset", "tiny", "--dtype", "q8_0", "--seed", "1",
                    "-o", path], check=True, capture_output=True)
    return path


@pytest.fixture(scope="session")
def llm(model_path):
    import tzero

    return tzero.LLM(model_path, threads=2)


def run_cli(tzero_bin, *args):
    p = subprocess.run([tzero_bin, *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p
