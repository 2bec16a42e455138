"""srdp for dbt-duckdb: the profile that points dbt at srdp, and the plugin that loads srdp.

* :mod:`srdp.dbt.plugin`: a dbt-duckdb plugin (``plugins: [{module: srdp.dbt.plugin}]``) that
  ``LOAD``s the srdp extension file on every connection dbt opens. dbt-duckdb's own
  ``extensions:`` list runs ``INSTALL`` first, which copies the file into the extension
  directory (the srdp checkout's ``.duckdb/extensions``); the plugin writes nothing.
* :mod:`srdp.dbt.profile`: renders that profile from ``srdp.toml`` (``python -m srdp
  dbt-profile --config srdp.toml``).

The dbt macros themselves are srdp's dbt package: ``srdp/dbt_package`` in the wheel, the
checkout's ``dbt/`` folder in a checkout (``python -m srdp dbt-package-path`` prints it).
"""

from __future__ import annotations
