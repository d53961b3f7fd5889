"""Files a running pipeline keeps using: a pinned file keeps its content when
the path is replaced, and writes go through a temporary file and a rename."""
import numpy as np
import pytest

from spacy_bioel.files import PinnedFile, replace_file


def test_a_pinned_file_survives_its_replacement(tmp_path):
    path = tmp_path / "weights"
    path.write_bytes(b"old" * 10_000)
    pinned = PinnedFile(path)
    assert pinned.intact()
    replace_file(path, lambda p: p.write_bytes(b"new"))
    assert not pinned.intact()
    assert path.read_bytes() == b"new" and pinned.read_bytes() == b"old" * 10_000
    pinned.copy_to(tmp_path / "copy")
    assert (tmp_path / "copy").read_bytes() == b"old" * 10_000
    path.unlink()
    assert pinned.read_bytes() == b"old" * 10_000
    pinned.close()


def test_copying_a_pinned_file_onto_itself_keeps_it(tmp_path):
    path = tmp_path / "weights"
    path.write_bytes(b"same")
    PinnedFile(path).copy_to(path)
    assert path.read_bytes() == b"same"


def test_a_memory_map_keeps_its_content_when_saved_over(tmp_path):
    path = tmp_path / "vectors.npy"
    np.save(path, np.arange(10.0))
    mapped = np.load(path, mmap_mode="r")
    def write(partial):
        with open(partial, "wb") as handle:  # np.save would add '.npy' to the temporary name
            np.save(handle, mapped * 2)

    replace_file(path, write)
    assert np.array_equal(mapped, np.arange(10.0)) and np.load(path)[1] == 2.0


def test_a_failed_write_leaves_the_old_file_and_no_partial(tmp_path):
    path = tmp_path / "part"
    path.write_bytes(b"good")

    def fail(partial):
        partial.write_bytes(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        replace_file(path, fail)
    assert path.read_bytes() == b"good" and [p.name for p in tmp_path.iterdir()] == ["part"]


@pytest.mark.parametrize("name", ["/etc/passwd", "../x", "a/../../x", "a//b", "./a", "", "a\\b",
                                  "C:/x", "a\x00b"])
def test_a_name_that_leaves_its_folder_is_refused(tmp_path, name):
    from spacy_bioel.errors import BioELError
    from spacy_bioel.files import member

    with pytest.raises(BioELError) as err:
        member(tmp_path, name)
    assert err.value.code == "E230"


def test_a_name_through_a_link_is_refused_and_plain_names_pass(tmp_path):
    from spacy_bioel.errors import BioELError
    from spacy_bioel.files import member

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(BioELError):
        member(tmp_path / "in", "link/x")
    assert member(tmp_path / "in", "index/vectors.npy") == tmp_path / "in" / "index" / "vectors.npy"


def test_check_tree_refuses_links_out_and_special_files_only(tmp_path):
    import os

    from spacy_bioel.errors import BioELError
    from spacy_bioel.files import check_tree, unlink_links

    (tmp_path / "p" / "sub").mkdir(parents=True)
    (tmp_path / "p" / "sub" / "a").write_text("a")
    (tmp_path / "p" / "inside").symlink_to(tmp_path / "p" / "sub" / "a")  # stays inside: fine
    check_tree(tmp_path / "p")
    (tmp_path / "secret").write_text("s")
    (tmp_path / "p" / "sub" / "out").symlink_to(tmp_path / "secret")
    with pytest.raises(BioELError) as err:
        check_tree(tmp_path / "p")
    assert err.value.code == "E231" and "out" in str(err.value)
    assert unlink_links(tmp_path / "p") == 2 and (tmp_path / "secret").read_text() == "s"
    os.mkfifo(tmp_path / "p" / "fifo")
    with pytest.raises(BioELError) as err:
        check_tree(tmp_path / "p")
    assert "FIFO" in str(err.value)


def test_the_walker_reads_a_folder_as_loading_does(tmp_path):
    """`tree_files` (loading's and packaging's one walker): regular files, a link that
    stays inside read where it points, E231 for a link out, a FIFO or a walk in circles."""
    import os

    from spacy_bioel.errors import BioELError
    from spacy_bioel.files import copy_tree, tree_files

    folder = tmp_path / "pipeline"
    (folder / "vocab").mkdir(parents=True)
    (folder / "vocab" / "strings.json").write_text("[]")
    (folder / "cfg").write_text("{}")
    (folder / "alias").symlink_to(folder / "vocab")  # inside: read through it
    found = sorted(p.relative_to(folder).as_posix() for p in tree_files(folder))
    assert found == ["alias/strings.json", "cfg", "vocab/strings.json"]
    assert copy_tree(folder, tmp_path / "copy") == 6  # bytes: three files of two
    assert not any(p.is_symlink() for p in (tmp_path / "copy").rglob("*"))
    (folder / "alias").unlink()
    outside = tmp_path / "secret.txt"
    outside.write_text("a key")
    (folder / "vocab" / "extra").symlink_to(outside)
    with pytest.raises(BioELError, match="E231"):
        copy_tree(folder, tmp_path / "copy2")
    assert not (tmp_path / "copy2" / "vocab" / "extra").exists()
    (folder / "vocab" / "extra").unlink()
    (folder / "vocab" / "up").symlink_to(folder)
    with pytest.raises(BioELError, match="E231"):
        list(tree_files(folder))
    (folder / "vocab" / "up").unlink()
    os.mkfifo(folder / "vocab" / "pipe")
    with pytest.raises(BioELError, match="E231"):
        list(tree_files(folder))
