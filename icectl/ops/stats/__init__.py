"""Table statistics: files the spec lets a table register for readers and planners."""
