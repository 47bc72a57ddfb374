"""memtools imports lancedb without running its REST client's package ``__init__`` (about a second
of a cold search), and code that uses that client still gets it. Checked in a fresh interpreter,
where nothing has imported lancedb yet."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys, tempfile
import pyarrow as pa
from memtools.store.tables.lance_import import import_lancedb

lancedb = import_lancedb()
api = "lance_namespace_urllib3_client.api.table_api"
print("api before:", api in sys.modules)
db = lancedb.connect(tempfile.mkdtemp())
table = db.create_table("t", pa.table({"id": [1, 2, 3], "vector": [[0.1, 0.2], [0.2, 0.1], [0.9, 0.9]]}))
print("nearest:", table.search([0.9, 0.8]).limit(1).to_list()[0]["id"])
from lance_namespace_urllib3_client import ApiClient, TableApi
print("api after:", api in sys.modules, ApiClient.__name__, TableApi.__name__)
"""


def test_lancedb_imports_without_the_rest_client_and_the_client_still_loads_on_use():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "api before: False" in out.stdout
    assert "nearest: 3" in out.stdout
    assert "api after: True ApiClient TableApi" in out.stdout


def test_an_already_imported_client_is_left_alone():
    script = ("import lance_namespace_urllib3_client as c, sys\n"
              "from memtools.store.tables.lance_import import import_lancedb\n"
              "import_lancedb()\n"
              "assert sys.modules['lance_namespace_urllib3_client'] is c and hasattr(c, 'ApiClient')\n"
              "print('ok')")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
