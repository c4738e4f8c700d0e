"""The built-in packs ship inside the wheel: build it, install it in a fresh venv, scan a real fixture."""

from __future__ import annotations

import json
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from .conftest import ROOT, corpus


def test_wheel_installs_and_scans_with_its_own_packs(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(ROOT)],
                   check=True, capture_output=True)
    (wheel,) = dist.glob("compile_triage-*.whl")  # the distribution's own name; the package inside is `triage`
    names = zipfile.ZipFile(wheel).namelist()
    assert "triage/patterns/dfc-compile.yaml" in names and "triage/py.typed" in names
    assert "triage/templates/run.html" in names

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], check=True,
                   capture_output=True)
    # The dependencies come from this environment (appended after the fresh venv's own site-packages).
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    log = corpus("hls/cases/005-")
    proc = subprocess.run([str(env_dir / "bin" / "triage"), "scan", str(log), "--format", "json", "--no-store"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["findings"][0]["id"] == "hls/xform-203-504-stop-unrolling"
    where = subprocess.run([str(python), "-c", "import triage; print(triage.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path).stdout
    assert str(env_dir) in where, "the test must exercise the installed wheel, not the checkout"
