"""kdump: forensic dump, verify and repair for Apache Kafka's on-disk logs.

`import kdump` is kept cheap: codecs, rich and pyspark load only when used.
"""

from __future__ import annotations

__version__ = "0.1.0"
