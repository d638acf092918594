"""Text for people: the terminal report, failure messages, comparisons, charts."""
