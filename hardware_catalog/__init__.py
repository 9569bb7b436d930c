"""capplan's hardware, model and site catalog."""
