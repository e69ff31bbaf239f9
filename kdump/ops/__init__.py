"""The commands as library functions: they return results or iterators of events and never print."""
