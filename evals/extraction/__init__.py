"""Extraction quality: are the facts chatsvc stores about a user grounded in the user's
own words? Measured through the HTTP API of a real `chatsvc serve` (see README.md):
gold recall on LoCoMo's observations, junk on an adversarial set, and the share of
scripted bad answers the service refuses to store."""
