"""What the search tools (glob, grep) share: the ripgrep runner and the .gitignore rules."""
