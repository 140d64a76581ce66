"""cite package."""
