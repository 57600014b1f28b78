"""The ETDump flatbuffer schema as classes: ``generated.py`` is what ``flatc --python --gen-onefile`` (flatc 2.0.8)
writes for ExecuTorch 1.5.1's ``devtools/etdump/etdump_schema_flatcc.fbs`` (namespace ``etdump``, file
identifier ``ED00``); only the generated code is kept here, not the schema. Regenerate with
``flatc --python --gen-onefile -o DIR etdump_schema_flatcc.fbs`` (``scalar_type.fbs`` beside it) and copy
``etdump_schema_flatcc_generated.py`` to ``generated.py``."""

from .generated import *  # noqa: F401,F403

#: the schema's ``file_identifier``
FILE_IDENTIFIER = b"ED00"
