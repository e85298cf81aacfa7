"""Renderers. Each turns results into one format and none computes a number: ``text/`` (the
terminal table, CSV, Markdown, the diff tables, the profile table), ``html/`` (one module per
page over shared public helpers), ``json`` (the JSON text, in chunks), ``profile_json``,
``target_file`` (a measured target's TOML file), ``bounds`` (what bounds a kernel, in words) and
``formatting`` (numbers and changes, the same in every output)."""
