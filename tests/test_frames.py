"""Sites as a snapshot stores them: the same on every machine, wherever the venv is."""

from __future__ import annotations

import os
import sysconfig

import transformers

from pytest_workload._core.frames import portable_site


def test_a_library_site_is_its_module_path_also_from_a_venv_inside_the_rootdir():
    source = os.path.abspath(transformers.__file__)
    expected = f"{os.path.join('transformers', '__init__.py')}:7"
    purelib = os.path.abspath(sysconfig.get_paths()["purelib"])
    # the rootdir holds the venv (a CI job's `.venv` in its checkout), or it does not
    for rootdir in (os.path.dirname(purelib), os.path.dirname(os.path.dirname(purelib)), "/x"):
        assert portable_site(source, 7, rootdir) == expected


def test_the_users_code_is_relative_to_the_rootdir(tmp_path):
    model = tmp_path / "pkg" / "model.py"
    assert portable_site(str(model), 3, str(tmp_path)) == f"{os.path.join('pkg', 'model.py')}:3"
