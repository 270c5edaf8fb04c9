"""Text handling shared by every judge backend: sentence and statement segmentation."""
