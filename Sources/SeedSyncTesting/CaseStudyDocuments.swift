/// The JSON examples of the sync case study (`shared/seeds/sync-case-study.txt`), with the
/// published typos fixed: closing quotes after `changeSets` and `screen_instance_items`, a missing
/// comma, `+` instead of `%2B`, and the elided `...` records removed.
public enum CaseStudyDocuments {
    public static let singleChangeSet = """
        {
            "types": [ "users" ],
            "users": {
                "create": [],
                "update": [ 1013 ],
                "delete": [],
                "attributes": {
                    "1013": {
                        "first_name": "Florian",
                        "last_name": "Kugler",
                        "date_of_birth": "1979-09-12 00:00:00.000+00",
                        "revision": 355
                    }
                }
            }
        }
        """

    public static let clientRequest = """
        {
            "maxRevision": 1000,
            "changeSets": [
                {
                    "types": [ "screen_instances", "screen_instance_items" ],
                    "screen_instances": {
                        "create": [ -10 ],
                        "update": [],
                        "delete": [],
                        "attributes": {
                            "-10": {
                                "screen_id": 749,
                                "date": "2014-02-01 13:15:23.487+01",
                                "comment": ""
                            }
                        }
                    },
                    "screen_instance_items": {
                        "create": [ -11, -12 ],
                        "update": [],
                        "delete": [],
                        "attributes": {
                            "-11": { "screen_instance_id": -10, "numeric_value": 2 },
                            "-12": { "screen_instance_id": -10, "numeric_value": 5 }
                        }
                    }
                }
            ]
        }
        """

    public static let serverResponse = """
        {
            "maxRevision": 1001,
            "hasMore": false,
            "changeSets": [
                {
                    "conflict": false,
                    "revision": 1001,
                    "types": [ "screen_instances", "screen_instance_items" ],
                    "screen_instances": {
                        "create": [ 321 ],
                        "update": [],
                        "delete": [],
                        "attributes": {
                            "321": {
                                "__oldId__": -10,
                                "revision": 1001,
                                "screen_id": 749,
                                "date": "2014-02-01 13:15:23.487+01",
                                "comment": ""
                            }
                        }
                    },
                    "screen_instance_items": {
                        "create": [ 412, 413 ],
                        "update": [],
                        "delete": [],
                        "attributes": {
                            "412": { "__oldId__": -11, "revision": 1001, "screen_instance_id": 321, "numeric_value": 2 },
                            "413": { "__oldId__": -12, "revision": 1001, "screen_instance_id": 321, "numeric_value": 5 }
                        }
                    }
                }
            ]
        }
        """
}
