from longdoc.model import Page
from longdoc.pipeline.checkpoint import DirectoryCheckpoint


def test_group_is_resumable_only_when_marked_complete(tmp_path):
    ck = DirectoryCheckpoint(tmp_path / "ck")
    ck.begin("fp1")
    ck.save_group(0, [Page(number=1, width=1, height=1), Page(number=2, width=1, height=1)], complete=True)
    ck.save_group(1, [Page(number=3, width=1, height=1)], complete=False)
    again = DirectoryCheckpoint(tmp_path / "ck")
    again.begin("fp1")
    assert again.group_done(0) and not again.group_done(1)
    assert again.load_page(2).number == 2


def test_other_fingerprint_discards_old_work(tmp_path):
    ck = DirectoryCheckpoint(tmp_path / "ck")
    ck.begin("fp1")
    ck.save_group(0, [Page(number=1, width=1, height=1)], complete=True)
    ck2 = DirectoryCheckpoint(tmp_path / "ck")
    ck2.begin("fp2")
    assert not ck2.group_done(0) and ck2.load_page(1) is None


def test_damaged_page_file_is_not_trusted(tmp_path):
    ck = DirectoryCheckpoint(tmp_path / "ck")
    ck.begin("fp")
    ck.save_group(0, [Page(number=1, width=1, height=1)], complete=True)
    (tmp_path / "ck" / "pages" / "000001.json").write_text("{trunc")
    assert ck.load_page(1) is None
