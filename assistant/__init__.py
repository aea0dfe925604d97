"""The chat assistant: an agent whose tools call the nightshift API with the chatting person's token."""
