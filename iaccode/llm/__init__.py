"""Model providers: a common event stream over the Anthropic API or a scripted offline model."""
