"""Reading a table's state: scan plans and their rendering, change reads, inspect views."""
