"""The twin's controllers: what turns stored objects into running pods, endpoints, events and chaos."""
