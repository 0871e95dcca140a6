"""Browser tests of the console: headless Chromium (Debian packages) driven by Selenium."""
