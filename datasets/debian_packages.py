"""Debian package descriptions as a text-classification data set (sparse TF-IDF workloads).

One document per package: its description (the short line, then the long text), labelled by the
package's Section with any archive-area prefix dropped ("contrib/utils" -> "utils"). Read from the
``Packages`` lists that apt keeps, and from the ``Translation-en`` lists beside them when present
(Debian's Packages lists carry only the short description and its MD5; the long text is in
Translation-en, matched on (Package, Description-md5)). Without Translation-en, the documents are
the Packages lists' own Description fields (short lines only on Debian).

Where the lists are read from: the ``directory`` argument, else ``$GPUML_APT_LISTS``, else
``/var/lib/apt/lists``. Files named ``*_Packages`` and ``*_Translation-en``, plain or compressed
(.gz, .xz, .bz2 through the standard library; .lz4, as apt stores them when its indexes are kept
compressed, through the ``lz4`` module or the ``lz4cat`` command). ``scripts/gpu-prepare`` copies
them into ``.deps/apt-lists`` (xz) for the GPU machine, which has neither network nor apt lists.

Stanzas are parsed by python-debian's ``deb822`` when it is installed, else by ``_read_stanzas``
below (RFC-822 stanzas: "Field: value", continuation lines start with a space or tab, a blank line
ends a stanza); both give the same documents.

Rows: one per package name. A name listed more than once (several suites: bookworm, -updates,
-security) keeps its first stanza in the order of the list files sorted by file name, then of the
stanzas within a file. (With Debian's file names, "..._debian-security_..." and
"..._bookworm-updates_..." sort before "..._bookworm_main_...", so the updated stanza wins.)
Classes: the sections with at least ``min_section_size`` packages (default MIN_SECTION_SIZE = 200);
the packages of smaller sections are dropped. Rows are in package-name order.

On Debian 12 (bookworm main + updates + security, amd64; lists of November 2026): 63,666
packages in 58 sections; 62,211 of them in the 43 sections of at least 200 (largest: libs 6,711,
smallest kept: 216). With Translation-en, documents have 61 words on average; without it (a
default Docker image's lists), 6.6. Parsing: about 8 s with the built-in reader, about 3x longer
with deb822 (pure Python without python-apt).

    from debian_packages import load_debian_descriptions
    texts, y, section_names, package_names = load_debian_descriptions()
"""

import bz2
import glob
import gzip
import io
import lzma
import os
import shutil
import subprocess

import numpy as np

DEFAULT_APT_LISTS = "/var/lib/apt/lists"
MIN_SECTION_SIZE = 200
_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
_KINDS = ("Packages", "Translation-en")


def apt_lists_dir(directory=None):
    """The folder holding apt's lists: `directory`, else $GPUML_APT_LISTS, else /var/lib/apt/lists."""
    return directory or os.environ.get("GPUML_APT_LISTS") or DEFAULT_APT_LISTS


def list_files(directory, kind):
    """The `kind` ("Packages" or "Translation-en") list files in `directory`, sorted by file name.

    A list stored both plain and compressed counts once (the plain file)."""
    by_stem = {}
    for path in sorted(glob.glob(os.path.join(directory, f"*_{kind}*"))):
        name = os.path.basename(path)
        stem, ext = os.path.splitext(name)
        if name.endswith(f"_{kind}"):
            by_stem[name] = path
        elif stem.endswith(f"_{kind}") and (ext in _OPENERS or ext == ".lz4"):
            by_stem.setdefault(stem, path)
    return [by_stem[stem] for stem in sorted(by_stem)]


def _open_text(path):
    ext = os.path.splitext(path)[1]
    if ext in _OPENERS:
        return _OPENERS[ext](path, "rt", encoding="utf-8")
    if ext == ".lz4":
        try:
            import lz4.frame
        except ImportError:
            lz4cat = shutil.which("lz4cat")
            if lz4cat is None:
                raise OSError(f"{path}: reading .lz4 needs the lz4 Python module or the lz4cat command") from None
            data = subprocess.run([lz4cat, path], check=True, stdout=subprocess.PIPE).stdout
            return io.StringIO(data.decode("utf-8"))
        return io.TextIOWrapper(lz4.frame.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _read_stanzas(lines):
    """Yields each RFC-822 stanza of `lines` as a dict (the fallback when python-debian is missing).

    A field's value is the text after "Field:" with its continuation lines joined by newlines, as
    deb822 gives it."""
    stanza, field = {}, None
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if stanza:
                yield stanza
            stanza, field = {}, None
        elif line[0] in " \t":
            if field is not None:
                stanza[field] += "\n" + line
        elif not line.startswith("#"):
            field, _, value = line.partition(":")
            stanza[field] = value.strip()
    if stanza:
        yield stanza


def read_stanzas(path, fields, use_deb822=None):
    """Yields the stanzas of a list file as dicts holding `fields` (those present).

    use_deb822: True requires python-debian, False uses the built-in reader, None picks deb822
    when installed."""
    deb822 = None
    if use_deb822 is not False:
        try:
            from debian import deb822
        except ImportError:
            if use_deb822:
                raise
    with _open_text(path) as f:
        if deb822 is not None:
            for stanza in deb822.Deb822.iter_paragraphs(f, fields=fields, use_apt_pkg=False):
                yield {k: stanza[k] for k in fields if k in stanza}
        else:
            for stanza in _read_stanzas(f):
                yield {k: stanza[k] for k in fields if k in stanza}


def _description_text(value):
    """A Description field as plain text: the short line, then the long text's paragraphs (" ."
    lines, which stand for blank lines, become newlines)."""
    lines = value.split("\n")
    body = [line.strip() for line in lines[1:]]
    return "\n".join([lines[0].strip()] + ["" if line == "." else line for line in body]).strip()


def load_debian_descriptions(directory=None, min_section_size=MIN_SECTION_SIZE, use_deb822=None):
    """Returns (texts, y, section_names, package_names).

    texts: list of str, one description per package; y: int64 array, the index of the package's
    section in section_names (sorted tuple of str); package_names: list of str, sorted, unique.
    Raises FileNotFoundError when the folder holds no Packages list, ValueError for a
    min_section_size below 1 or when no section keeps enough packages.
    """
    if not (isinstance(min_section_size, (int, np.integer)) and min_section_size >= 1):
        raise ValueError(f"min_section_size must be an integer >= 1, got {min_section_size!r}")
    directory = apt_lists_dir(directory)
    packages_files = list_files(directory, "Packages")
    if not packages_files:
        raise FileNotFoundError(
            f"no apt Packages lists in {directory}; run apt-get update, or set GPUML_APT_LISTS to a folder "
            "holding *_Packages lists (scripts/gpu-prepare fills .deps/apt-lists)"
        )

    chosen = {}  # package name -> (section, short description, description md5)
    for path in packages_files:
        for stanza in read_stanzas(path, ["Package", "Section", "Description", "Description-md5"], use_deb822):
            name = stanza.get("Package")
            if name and name not in chosen and "Section" in stanza and "Description" in stanza:
                section = stanza["Section"].rpartition("/")[2]
                chosen[name] = (section, stanza["Description"], stanza.get("Description-md5"))

    long_descriptions = {}  # (package, description md5) -> Description-en
    for path in list_files(directory, "Translation-en"):
        for stanza in read_stanzas(path, ["Package", "Description-md5", "Description-en"], use_deb822):
            key = (stanza.get("Package"), stanza.get("Description-md5"))
            if "Description-en" in stanza:
                long_descriptions.setdefault(key, stanza["Description-en"])

    names = sorted(chosen)
    sections = [chosen[name][0] for name in names]
    kept_sections, counts = np.unique(sections, return_counts=True)
    kept_sections = tuple(str(s) for s in kept_sections[counts >= min_section_size])
    if not kept_sections:
        raise ValueError(f"no section of the lists in {directory} has {min_section_size} packages or more")
    index = {section: i for i, section in enumerate(kept_sections)}

    texts, y, package_names = [], [], []
    for name, section in zip(names, sections):
        if section in index:
            _, short, md5 = chosen[name]
            texts.append(_description_text(long_descriptions.get((name, md5), short)))
            y.append(index[section])
            package_names.append(name)
    return texts, np.asarray(y, dtype=np.int64), kept_sections, package_names
