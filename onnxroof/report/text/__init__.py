"""The text renderers: the terminal table and CSV (``table``), Markdown, the diff and compare
tables, the module tree, the profile table and the ops documentation."""
