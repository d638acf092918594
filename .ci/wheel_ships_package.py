"""Exit non-zero unless the wheel given holds every file git tracks under pytest_workload/."""

import subprocess
import sys
import zipfile

shipped = {name for name in zipfile.ZipFile(sys.argv[1]).namelist()}
tracked = set(subprocess.check_output(["git", "ls-files", "pytest_workload"], text=True).split())
missing = sorted(tracked - shipped)
if missing:
    sys.exit(f"{sys.argv[1]} lacks {len(missing)} of {len(tracked)} files, first {missing[:3]}")
print(f"the wheel ships all {len(tracked)} files of pytest_workload/")
