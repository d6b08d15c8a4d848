"""The public API of the library modules, one declaration a line, from their symbol graphs.

Usage: public_api.py SYMBOLGRAPH_DIR OUT_DIR MODULE...
Writes OUT_DIR/MODULE.txt for each module: every public symbol the module declares (its extensions
of other modules' types included), as `path: declaration`, sorted. Members the compiler synthesizes
or inherits (`!=`, `localizedDescription`) are left out: they follow from the declarations.
"""
import glob
import json
import os
import sys


MARKERS = {"Copyable", "Escapable", "BitwiseCopyable", "SendableMetatype"}


def lines(directory, module):
    result = set()
    for path in glob.glob(os.path.join(directory, module + ".symbols.json")) + glob.glob(os.path.join(directory, module + "@*.symbols.json")):
        with open(path) as file:
            graph = json.load(file)
        names = {}
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open") or "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                continue
            name = ".".join(symbol["pathComponents"])
            names[symbol["identifier"]["precise"]] = name
            declaration = "".join(fragment["spelling"] for fragment in symbol.get("declarationFragments", []))
            result.add(name + ": " + " ".join(declaration.split()))
        # Conformances are API too: `ImportError: conforms to Sendable`.
        for relation in graph.get("relationships", []):
            if relation["kind"] == "conformsTo" and relation["source"] in names:
                target = (relation.get("targetFallback") or names.get(relation["target"]) or relation["target"]).split(".")[-1]
                # Marker protocols the compiler infers differ between toolchains; they are not declared.
                if target not in MARKERS:
                    result.add(names[relation["source"]] + ": conforms to " + target)
    return sorted(result)


def main():
    directory, out, modules = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    for module in modules:
        with open(os.path.join(out, module + ".txt"), "w") as file:
            file.write("".join(line + "\n" for line in lines(directory, module)))


main()
