"""The page reports (tests/site_pages.py) on share 0 of 2 of the built site's pages with the pages
that have a probe (search, the step-through animation): each page loaded once
in Chromium with no network, checked for errors and untypeset math, and by axe-core."""
# ruff: noqa: F811 (a test names the fixtures it uses)
from site_browser import browser, server, site  # noqa: F401 (the fixtures: pytest finds them among the module's names)
from site_pages import (  # noqa: F401
    axe,
    page_reports,
    pytest_generate_tests,
    test_chapter_renders_offline,
    test_code_tokens_are_left_out_only_where_nothing_but_their_colours_is_checked,
    test_colour_contrast_is_checked_on_every_kind_of_element,
    test_colour_rules_skip_repeats_but_not_a_new_kind_inside_them,
    test_pages_pass_the_accessibility_checker,
    test_rules_left_out_report_nothing_serious,
    test_search_finds_pages,
    test_search_results_show_readable_math,
    test_step_through_animation_steps,
)

PAGE_SHARE = (0, 2)
