"""Stage 7: renderers. Each turns an Analysis into one format; none computes a number."""
