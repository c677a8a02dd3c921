"""Infrastructure as Code: inventory, checks after writes, the infra-change guard, plans."""
