"""Research: the seed papers' methods that our own results reject, kept so that
every research config (configs/linker_biofeg*.cfg, graphprompt.cfg, linker_proxy.cfg)
still loads, trains and reproduces its results page. Registered through entry
points like the core's stages and reached through the linker's training hooks
(`training.hooks`); nothing in the core packages imports this package.

- BioFEG (Sui et al.): `biofeg`, `feature_gan`;
- GraphPrompt (Xu et al.): `graphprompt_loss`, `graphprompt_step`, `graphprompt_templates`;
- FGSM and random / mixed negatives (Wiatrak et al.): `fgsm`, `registry`;
- the mention tower that pools an upstream component's token vectors: `contextual`, and
  spacy-transformers' model taking the embedded encoder's name: `trf`.
"""
