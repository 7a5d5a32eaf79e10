"""A minimal third crowd provider, kept in tests: everything it knows lives in this package (its
platform, client, worker page and URL module), and it joins crowdbench by one registry line
(``PROVIDERS.registered(ThirdProvider)``). ``test_third_provider`` takes it through a researcher's
API path to show that adding a provider edits nothing outside its package."""
