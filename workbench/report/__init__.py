"""Reports: pure functions from stored runs to text, one module per format."""
