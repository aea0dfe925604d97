"""Small, pure readers of what people type (numbers, durations, times, commands) used by the offline model."""
