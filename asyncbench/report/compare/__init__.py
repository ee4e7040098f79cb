"""``compare``'s model and renderings, one job per module (the command line, its flags and
exit code, is :mod:`asyncbench.cli.compare`):

- :mod:`.side`: one side of a comparison, its runs pooled per engine and phase;
- :mod:`.inputs`: the result files a side names (walked, bounded), read into a side;
- :mod:`.rows`: the engines' phases both sides ran (compared rows), paced apart (named,
  not compared) or held by one side only;
- :mod:`.differences`: what the two sides measured differently (settings, machine, rates);
- :mod:`.summary`: one figure per engine, the geometric mean of its phases' ratios;
- :mod:`.legends`: the sentences every rendering shares;
- :mod:`.text`, :mod:`.markdown`, :mod:`.json_doc`: the three outputs.

Why a package: the model, its renderings and the command line were one module of 846
lines; a rendering changes without touching what is compared, and the reverse.
"""
