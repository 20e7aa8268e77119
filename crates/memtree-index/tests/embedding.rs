//! The sentence-embedding model (feature `embeddings`) on the real
//! all-MiniLM-L6-v2, which `bash scripts/test.sh --embeddings` installs and
//! names in `MEMTREE_TEST_EMBEDDING_MODEL`: vectors, padding, truncation,
//! scores against a reference implementation, errors and the model id.
#![cfg(feature = "embeddings")]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memtree_index::{Embedder, EmbeddingError, dot};

const CAT: &str = "The cat sits on the mat";
const KITTEN: &str = "A kitten is sitting on a rug";
const REVENUE: &str = "Quarterly revenue grew by four percent";

/// Over 256 tokens: 6 sentences on a garden, 6 on revenue, 12 on a space
/// probe. The model sees the first 256 tokens (garden, revenue, some probe).
fn long_text() -> String {
    "The garden behind the old house is full of roses and tulips in spring. ".repeat(6)
        + &"Quarterly revenue grew by four percent, and the board raised the dividend. ".repeat(6)
        + &"The probe reached the outer planets after a journey of twelve years. ".repeat(12)
}

fn model_folder() -> PathBuf {
    match std::env::var_os("MEMTREE_TEST_EMBEDDING_MODEL") {
        Some(folder) => PathBuf::from(folder),
        None => panic!(
            "MEMTREE_TEST_EMBEDDING_MODEL is not set: run `bash scripts/test.sh --embeddings`, \
             which installs the test model and sets it"
        ),
    }
}

/// The model, loaded once for the tests that only embed.
fn embedder() -> &'static Embedder {
    static EMBEDDER: OnceLock<Embedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| Embedder::load(&model_folder()).unwrap())
}

fn embed_one(text: &str) -> Vec<f32> {
    embedder().embed(&[text]).unwrap().remove(0)
}

#[test]
fn vectors_have_the_models_dimensions_and_unit_length() {
    let embedder = embedder();
    assert_eq!(embedder.dimensions(), 384);
    assert_eq!(embedder.max_tokens(), 256);
    let vectors = embedder.embed(&[CAT, "", "Ünïcödé, emoji 🐈 and 中文"]).unwrap();
    assert_eq!(vectors.len(), 3);
    for vector in &vectors {
        assert_eq!(vector.len(), 384);
        assert!((dot(vector, vector) - 1.0).abs() < 1e-5, "norm² {}", dot(vector, vector));
    }
    assert!(embedder.embed(&[]).unwrap().is_empty());
}

/// all-MiniLM-L6-v2's tokenizer.json pads every text to 128 tokens; pads
/// that reached the mean would make a text's vector depend on its batch.
#[test]
fn a_text_embeds_the_same_alone_and_beside_longer_ones() {
    let long = long_text();
    let alone = embed_one(CAT);
    let mut texts = vec![long.as_str(), CAT, KITTEN];
    // More than one forward pass's worth, so batching is crossed too.
    texts.extend(std::iter::repeat_n(REVENUE, 40));
    let batched = embedder().embed(&texts).unwrap();
    let max_difference =
        |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
    assert!(max_difference(&alone, &batched[1]) < 1e-5, "{}", max_difference(&alone, &batched[1]));
    assert!(max_difference(&embed_one(KITTEN), &batched[2]) < 1e-5);
    assert!(max_difference(&embed_one(&long), &batched[0]) < 1e-5);
    assert!(max_difference(&embed_one(REVENUE), &batched[42]) < 1e-5);
}

/// Cosines from an independent numpy forward pass of the same weights in
/// float64 (BERT, mean over the attention mask, L2 norm; texts cut at 256
/// tokens as sentence-transformers does): `scripts/embedding-reference.py`.
#[test]
fn cosines_match_a_reference_implementation() {
    let long = long_text();
    let cases = [
        (CAT, KITTEN, 0.679154),
        (CAT, REVENUE, -0.030498),
        ("How do I reset my password?", "Steps to recover a forgotten login", 0.590352),
        // Cut at 128 tokens, as tokenizer.json says, this would be 0.421974.
        (&long, REVENUE, 0.372452),
    ];
    for (a, b, expected) in cases {
        let cosine = dot(&embed_one(a), &embed_one(b));
        assert!((cosine - expected).abs() < 1e-4, "cos({a:.30}…, {b:.30}…) = {cosine}, expected {expected}");
    }
    let cat = embed_one(CAT);
    for (got, expected) in cat.iter().zip([0.134891, -0.032063, -0.020335, 0.035901]) {
        assert!((got - expected).abs() < 1e-4, "{:?}", &cat[..4]);
    }
}

#[test]
fn a_paraphrase_scores_far_above_an_unrelated_sentence() {
    let cat = embed_one(CAT);
    let paraphrase = dot(&cat, &embed_one(KITTEN));
    let unrelated = dot(&cat, &embed_one(REVENUE));
    assert!(paraphrase > unrelated + 0.4, "paraphrase {paraphrase}, unrelated {unrelated}");
}

#[test]
fn text_past_the_token_limit_is_ignored() {
    let long = long_text();
    let longer = format!("{long} Completely different words about volcanoes and lava follow here.");
    assert_eq!(embed_one(&long), embed_one(&longer));
}

#[test]
fn one_model_serves_several_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Embedder>();
    let expected = embed_one(CAT);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..2).map(|_| scope.spawn(|| embed_one(CAT))).collect();
        for thread in threads {
            let got = thread.join().unwrap();
            assert!(got.iter().zip(&expected).all(|(x, y)| (x - y).abs() < 1e-6));
        }
    });
}

/// A copy of the model folder at `to`; the weights hard-linked where the
/// file system allows, as they are large.
fn copy_model(to: &Path) {
    let from = model_folder();
    for file in [
        "config.json",
        "tokenizer.json",
        "sentence_bert_config.json",
        "modules.json",
        "1_Pooling/config.json",
    ] {
        let target = to.join(file);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(from.join(file), target).unwrap();
    }
    link_weights(&from, to);
}

fn link_weights(from: &Path, to: &Path) {
    let (source, target) = (from.join("model.safetensors"), to.join("model.safetensors"));
    if std::fs::hard_link(&source, &target).is_err() {
        std::fs::copy(&source, &target).unwrap();
    }
}

#[test]
fn the_id_follows_the_files_not_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second, changed) = (dir.path().join("a"), dir.path().join("b/minilm"), dir.path().join("c"));
    for folder in [&first, &second, &changed] {
        copy_model(folder);
    }
    let config = std::fs::read_to_string(changed.join("config.json")).unwrap();
    std::fs::write(
        changed.join("config.json"),
        config.replace("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": 1e-11"),
    )
    .unwrap();

    let id = |folder: &Path| Embedder::load(folder).unwrap().id().to_owned();
    let original = embedder().id();
    assert!(original.starts_with("bert-384d-") && original.len() == "bert-384d-".len() + 16, "{original}");
    assert_eq!(id(&first), original);
    assert_eq!(id(&second), original);
    assert_ne!(id(&changed), original);
}

/// What `Embedder::load` says about a folder, written by `setup` in an
/// empty temporary folder, with `{dir}` for the folder in `expected`.
fn check_refusal(setup: impl FnOnce(&Path), expected: &str, is_variant: fn(&EmbeddingError) -> bool) {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("model");
    setup(&folder);
    let error = Embedder::load(&folder).unwrap_err();
    assert!(is_variant(&error), "{error:?}");
    assert_eq!(error.to_string(), expected.replace("{dir}", &folder.display().to_string()));
}

#[test]
fn a_missing_or_broken_model_folder_is_named() {
    let model = model_folder();
    let copy = |files: &'static [&'static str]| {
        let model = model.clone();
        move |folder: &Path| {
            std::fs::create_dir_all(folder).unwrap();
            for file in files {
                std::fs::copy(model.join(file), folder.join(file)).unwrap();
            }
        }
    };
    check_refusal(
        |_| {},
        "embedding model folder {dir} does not exist or is not a folder",
        |e| matches!(e, EmbeddingError::MissingFolder { .. }),
    );
    check_refusal(copy(&[]), "embedding model folder {dir} has no config.json", |e| {
        matches!(e, EmbeddingError::MissingFile { file: "config.json", .. })
    });
    check_refusal(copy(&["config.json"]), "embedding model folder {dir} has no tokenizer.json", |e| {
        matches!(e, EmbeddingError::MissingFile { file: "tokenizer.json", .. })
    });
    check_refusal(
        copy(&["config.json", "tokenizer.json"]),
        "embedding model folder {dir} has no model.safetensors",
        |e| matches!(e, EmbeddingError::MissingFile { file: "model.safetensors", .. }),
    );
    check_refusal(
        |folder| {
            copy(&["tokenizer.json"])(folder);
            std::fs::write(folder.join("config.json"), "{\"hidden_size\": 384}").unwrap();
        },
        "embedding model config {dir}/config.json: missing field `vocab_size` at line 1 column 20",
        |e| matches!(e, EmbeddingError::BadConfig { .. }),
    );
    check_refusal(
        |folder| {
            copy(&["tokenizer.json"])(folder);
            let config = std::fs::read_to_string(model.join("config.json")).unwrap();
            std::fs::write(folder.join("config.json"), config.replace("\"bert\"", "\"roberta\"")).unwrap();
        },
        "embedding model config {dir}/config.json: model_type \"roberta\" is not BERT",
        |e| matches!(e, EmbeddingError::BadConfig { .. }),
    );
    check_refusal(
        |folder| {
            copy(&["config.json"])(folder);
            std::fs::write(folder.join("tokenizer.json"), "{}").unwrap();
        },
        "embedding tokenizer {dir}/tokenizer.json: Model missing. at line 1 column 2",
        |e| matches!(e, EmbeddingError::BadTokenizer { .. }),
    );
    check_refusal(
        |folder| {
            copy(&["config.json", "tokenizer.json"])(folder);
            std::fs::write(folder.join("model.safetensors"), b"not weights").unwrap();
        },
        "embedding model weights {dir}/model.safetensors: header too large",
        |e| matches!(e, EmbeddingError::BadWeights { .. }),
    );
    check_refusal(
        |folder| {
            copy(&["config.json", "tokenizer.json"])(folder);
            link_weights(&model, folder);
            std::fs::create_dir_all(folder.join("1_Pooling")).unwrap();
            std::fs::write(folder.join("1_Pooling/config.json"), "{\"pooling_mode_cls_token\": true}")
                .unwrap();
        },
        "embedding model config {dir}/1_Pooling/config.json: only mean pooling is supported",
        |e| matches!(e, EmbeddingError::BadConfig { .. }),
    );
}
