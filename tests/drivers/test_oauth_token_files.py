"""``FileTokenStore`` against a hostile file system: planted symlinks, stale temporary files,
directories other users can write, files other users can read.

The store is shared by every driver (``mcp_sansio_oauth``), so these tests need no driver.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mcp_sansio_oauth import FileTokenStore, MemoryTokenStore, OAuth, StoredToken, UnsafeTokenStore

URL = "https://a.example/mcp"


def token(access: str = "at-XYZZY-1") -> StoredToken:
    return StoredToken(access_token=access, token_type="Bearer", expires_at=None, scopes=("s",),
                       refresh_token="rt-XYZZY-1", issuer="https://as")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """A token directory as the store makes it (mode 0700)."""
    directory = tmp_path / "tokens"
    directory.mkdir(mode=0o700)
    return directory


@pytest.fixture
def umask_zero() -> Iterator[None]:
    """No umask to hide a mode the store forgot to set."""
    old = os.umask(0)
    yield
    os.umask(old)


def test_saved_token_file_has_mode_0600_whatever_the_umask(private: Path, umask_zero: None) -> None:
    store = FileTokenStore(private)
    store.save(URL, token())
    assert mode(store.path(URL)) == 0o600
    assert store.load(URL) == token()


def test_missing_directory_is_created_with_mode_0700(tmp_path: Path, umask_zero: None) -> None:
    store = FileTokenStore(tmp_path / "config" / "tokens")
    store.save(URL, token())
    assert mode(tmp_path / "config" / "tokens") == 0o700


def test_load_from_a_missing_directory_finds_nothing_and_creates_nothing(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens")
    assert store.load(URL) is None
    store.delete(URL)
    assert not (tmp_path / "tokens").exists()


def test_symlink_planted_at_the_old_temporary_name_is_not_written_through(private: Path,
                                                                          tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    store = FileTokenStore(private)
    store.path(URL).with_suffix(".tmp").symlink_to(victim)
    store.save(URL, token())
    assert victim.read_text() == "precious"
    assert mode(store.path(URL)) == 0o600
    assert store.load(URL) == token()


def test_stale_world_readable_temporary_file_does_not_make_the_token_readable(private: Path) -> None:
    store = FileTokenStore(private)
    stale = store.path(URL).with_suffix(".tmp")
    stale.write_text("stale")
    stale.chmod(0o644)
    store.save(URL, token())
    assert mode(store.path(URL)) == 0o600
    assert stale.read_text() == "stale"


def test_save_leaves_no_temporary_file_behind(private: Path) -> None:
    store = FileTokenStore(private)
    store.save(URL, token("one"))
    store.save(URL, token("two"))
    assert [p.name for p in private.iterdir()] == [store.path(URL).name]


@pytest.mark.parametrize("bits", [0o777, 0o770, 0o702, 0o1777])
def test_directory_other_users_can_write_is_refused(private: Path, bits: int) -> None:
    private.chmod(bits)
    store = FileTokenStore(private)
    with pytest.raises(UnsafeTokenStore, match="chmod 700") as caught:
        store.save(URL, token())
    assert caught.value.path == private and str(private) in str(caught.value)
    assert list(private.iterdir()) == []
    with pytest.raises(UnsafeTokenStore):
        store.load(URL)


def owned_by(uid: int, path: Path) -> Callable[[int], os.stat_result]:
    """``os.fstat`` as if ``path`` belonged to ``uid`` (no root needed to plant another's file)."""
    real_fstat = os.fstat
    inode = path.stat().st_ino

    def fstat(fd: int) -> os.stat_result:
        status = real_fstat(fd)
        if status.st_ino != inode:
            return status
        fields = list(status[:10])
        fields[4] = uid  # st_uid
        return os.stat_result(fields)

    return fstat


def test_directory_of_another_user_is_refused(private: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "fstat", owned_by(os.geteuid() + 4242, private))
    with pytest.raises(UnsafeTokenStore, match=f"belongs to user id {os.geteuid() + 4242}"):
        FileTokenStore(private).save(URL, token())
    assert list(private.iterdir()) == []


@pytest.mark.parametrize("target_bits", [0o777, 0o700])
def test_directory_that_is_a_symlink_is_never_followed(tmp_path: Path, target_bits: int) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=target_bits)
    target.chmod(target_bits)
    link = tmp_path / "tokens"
    link.symlink_to(target)
    store = FileTokenStore(link)
    calls: list[Callable[[], object]] = [lambda: store.save(URL, token()), lambda: store.load(URL),
                                         lambda: store.delete(URL)]
    for call in calls:
        with pytest.raises(UnsafeTokenStore, match="is a symlink") as caught:
            call()
        assert caught.value.path == link
    assert list(target.iterdir()) == []


def test_token_file_that_is_a_symlink_is_refused_and_not_read(private: Path, tmp_path: Path) -> None:
    elsewhere = FileTokenStore(tmp_path / "other")
    elsewhere.save(URL, token("planted"))
    store = FileTokenStore(private)
    store.path(URL).symlink_to(elsewhere.path(URL))
    with pytest.raises(UnsafeTokenStore, match="symlink") as caught:
        store.load(URL)
    assert caught.value.path == store.path(URL)
    with pytest.raises(UnsafeTokenStore):
        store.save(URL, token())
    assert elsewhere.load(URL) == token("planted")


def test_delete_removes_a_symlinked_token_file_not_its_target(private: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    store = FileTokenStore(private)
    store.path(URL).symlink_to(victim)
    store.delete(URL)
    assert not store.path(URL).is_symlink() and victim.read_text() == "precious"
    store.save(URL, token())  # and the store works again
    assert store.load(URL) == token()


@pytest.mark.parametrize("bits", [0o644, 0o640, 0o604, 0o666])
def test_token_file_others_can_read_is_refused(private: Path, bits: int) -> None:
    store = FileTokenStore(private)
    store.save(URL, token())
    store.path(URL).chmod(bits)
    with pytest.raises(UnsafeTokenStore, match="chmod 600"):
        store.load(URL)


def test_token_file_of_another_user_is_refused(private: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileTokenStore(private)
    store.save(URL, token())
    other = os.geteuid() + 1
    monkeypatch.setattr(os, "fstat", owned_by(other, store.path(URL)))
    with pytest.raises(UnsafeTokenStore, match=f"belongs to user id {other}"):
        store.load(URL)


def test_fifo_planted_as_the_token_file_is_refused_without_blocking(private: Path) -> None:
    store = FileTokenStore(private)
    os.mkfifo(store.path(URL), 0o600)
    with pytest.raises(UnsafeTokenStore, match="not a regular file"):
        store.load(URL)


def test_directory_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("")
    with pytest.raises(UnsafeTokenStore, match="not a directory"):
        FileTokenStore(tmp_path / "tokens").load(URL)


def test_directory_planted_as_the_token_file_is_refused(private: Path) -> None:
    store = FileTokenStore(private)
    store.path(URL).mkdir(mode=0o700)
    with pytest.raises(UnsafeTokenStore, match="not a regular file"):
        store.load(URL)


def test_no_secret_in_reprs_or_errors(private: Path) -> None:
    store = FileTokenStore(private)
    store.save(URL, token())
    store.path(URL).chmod(0o644)
    with pytest.raises(UnsafeTokenStore) as caught:
        store.load(URL)
    memory = MemoryTokenStore()
    memory.save(URL, token())
    shown = " ".join([repr(store), str(caught.value), repr(caught.value), repr(token()),
                      repr(OAuth(store=store)), repr(OAuth(store=memory))])
    assert "XYZZY" not in shown
