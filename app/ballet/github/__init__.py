"""Ballet's GitHub edge: webhook payload translation and the forge adapter."""
