from kernel.wording import counted


def test_a_count_takes_the_noun_in_the_number_it_needs():
    assert counted(1, "instance") == "1 instance"
    assert [counted(n, "request") for n in (0, 2)] == ["0 requests", "2 requests"]
    assert counted(3, "family", "families") == "3 families" and counted(1, "family", "families") == "1 family"
