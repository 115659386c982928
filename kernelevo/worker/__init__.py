"""Worker processes: the only place candidate code runs."""
