"""Documents into archival memory: reading files, chunking them, and watching folders."""
