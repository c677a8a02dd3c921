"""What web_fetch is made of: address checks (SSRF), the HTTP client, HTML to text."""
