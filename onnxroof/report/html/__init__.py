"""The HTML pages: one module per page (``model_page``, ``diff_page``, ``compare_page``,
``sweep_page``, ``profile_page``), each building a typed view of its results, over the shared
helpers of ``page`` (cells, cards, the page itself), ``chart_context``, ``charts`` and ``scales``
(the rooflines and timelines as SVG geometry). ``pages`` gathers the renderers."""
