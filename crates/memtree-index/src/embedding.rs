//! An in-process sentence-embedding model (feature `embeddings`): a
//! sentence-transformers folder of the BERT family (all-MiniLM-L6-v2, say)
//! run by candle on the CPU, turning texts into unit vectors whose dot
//! product is their cosine similarity.
//!
//! Nothing is downloaded: the folder is given, and its files are checked at
//! [`Embedder::load`] so a wrong folder fails there, not at the first search.

use std::io;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// The files a model folder must hold.
const CONFIG: &str = "config.json";
const TOKENIZER: &str = "tokenizer.json";
const WEIGHTS: &str = "model.safetensors";
/// Optional sentence-transformers files: the sequence limit the model was
/// trained with, and the list of modules after the transformer.
const SENTENCE_CONFIG: &str = "sentence_bert_config.json";
const MODULES: &str = "modules.json";
const POOLING: &str = "1_Pooling/config.json";

/// Texts per forward pass. A pass costs memory in proportion to the batch
/// times the square of its longest text; 32 is past the point where larger
/// batches stop being faster on a few cores.
const BATCH: usize = 32;

/// What the model id covers besides the files: the pooling and
/// normalisation done here. Change it when the code changes the vectors.
const METHOD: &str = "memtree-embedding 1: mean pooling over the attention mask, L2 norm";

/// Why a model folder could not be loaded, or texts not embedded.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddingError {
    #[error("embedding model folder {} does not exist or is not a folder", folder.display())]
    MissingFolder { folder: PathBuf },
    #[error("embedding model folder {} has no {file}", folder.display())]
    MissingFile { folder: PathBuf, file: &'static str },
    #[error("cannot read {}: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    #[error("embedding model config {}: {reason}", path.display())]
    BadConfig { path: PathBuf, reason: String },
    #[error("embedding tokenizer {}: {reason}", path.display())]
    BadTokenizer { path: PathBuf, reason: String },
    #[error("embedding model weights {}: {reason}", path.display())]
    BadWeights { path: PathBuf, reason: String },
    #[error("cannot tokenize texts to embed: {reason}")]
    Tokenize { reason: String },
    #[error("embedding model failed: {reason}")]
    Model { reason: String },
}

/// A loaded sentence-embedding model. `embed` takes `&self`, and the type is
/// `Send + Sync`, so one model can serve several threads.
pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    id: String,
    dimensions: usize,
    max_tokens: usize,
    pad_id: u32,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("id", &self.id)
            .field("dimensions", &self.dimensions)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the sentence-transformers model in `folder`: `config.json` (a
    /// BERT config), `tokenizer.json` and `model.safetensors` (read whole
    /// into memory: F32 on the CPU, about 90 MB for all-MiniLM-L6-v2).
    ///
    /// A `modules.json` or `1_Pooling/config.json` asking for anything but
    /// mean pooling (and normalisation) is refused rather than approximated.
    /// The padding `tokenizer.json` may switch on (all-MiniLM-L6-v2's pads
    /// every text to 128 tokens) is switched off: `embed` pads each batch to
    /// its longest text and leaves the pads out of the mean.
    pub fn load(folder: &Path) -> Result<Embedder, EmbeddingError> {
        if !folder.is_dir() {
            return Err(EmbeddingError::MissingFolder { folder: folder.to_owned() });
        }
        let config_bytes = read(folder, CONFIG)?;
        let config_path = folder.join(CONFIG);
        let bad_config = |reason: String| EmbeddingError::BadConfig { path: config_path.clone(), reason };
        let config: Config = serde_json::from_slice(&config_bytes).map_err(|e| bad_config(e.to_string()))?;
        // Other families load under the same tensor names but compute
        // positions differently (RoBERTa), which would give wrong vectors.
        match config.model_type.as_deref() {
            None | Some("bert") => {}
            Some(other) => return Err(bad_config(format!("model_type {other:?} is not BERT"))),
        }
        let sentence_config = read_optional(folder, SENTENCE_CONFIG)?;
        check_modules(folder)?;

        let tokenizer_bytes = read(folder, TOKENIZER)?;
        let tokenizer_path = folder.join(TOKENIZER);
        let bad_tokenizer =
            |reason: String| EmbeddingError::BadTokenizer { path: tokenizer_path.clone(), reason };
        let mut tokenizer =
            Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| bad_tokenizer(one_line(e)))?;
        let max_tokens = max_tokens(&config, sentence_config.as_deref(), &tokenizer, folder)?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| bad_tokenizer(one_line(e)))?;

        let weights = read(folder, WEIGHTS)?;
        let id = model_id(
            &config,
            max_tokens,
            &config_bytes,
            &tokenizer_bytes,
            sentence_config.as_deref(),
            &weights,
        );
        let weights_path = folder.join(WEIGHTS);
        let bad_weights = |e: candle_core::Error| EmbeddingError::BadWeights {
            path: weights_path.clone(),
            reason: one_line(e),
        };
        // Buffered, not memory-mapped: mapping is `unsafe` (the file could
        // change under us), and the workspace forbids unsafe code. The
        // buffer is freed once the tensors are copied out of it.
        let vb =
            VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).map_err(bad_weights)?;
        let model = BertModel::load(vb, &config).map_err(bad_weights)?;
        Ok(Embedder {
            model,
            tokenizer,
            id,
            dimensions: config.hidden_size,
            max_tokens,
            pad_id: config.pad_token_id as u32,
        })
    }

    /// The model's id, to store next to every vector it makes so that
    /// vectors of two models are never compared: `bert-384d-` and 16 hex
    /// digits of a SHA-1 over `config.json`, `tokenizer.json`,
    /// `sentence_bert_config.json` (if any), all of `model.safetensors`, the
    /// token limit and the pooling done here. The same files give the same
    /// id wherever the folder is and whatever it is called; a change to any
    /// weight, the vocabulary or the config gives another.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// How many numbers each vector has (384 for all-MiniLM-L6-v2).
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// The most tokens a text is embedded from, the two marker tokens
    /// included: sentence-transformers' `max_seq_length`, else the
    /// tokenizer's truncation, else the model's position limit (256 for
    /// all-MiniLM-L6-v2: some 200 words of plain English, fewer of code or
    /// rare words).
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// One unit vector per text, in order: the model's token vectors
    /// averaged over the text's tokens, then scaled to length 1, so
    /// [`crate::dot`] of two vectors is their cosine similarity. A text longer
    /// than [`Embedder::max_tokens`] is cut: only its beginning counts, so
    /// chunk long documents before embedding them. Texts are run in
    /// batches of similar length; which texts share a call changes a
    /// vector by float rounding only (under 1e-5 per number).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch_fast(texts.to_vec(), true)
            .map_err(|e| EmbeddingError::Tokenize { reason: one_line(e) })?;
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        // Texts of similar length share a batch, so little is spent on pads.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| ids[i]).collect();
            let rows = self.forward(&batch).map_err(|e| EmbeddingError::Model { reason: one_line(e) })?;
            for (&i, row) in chunk.iter().zip(rows) {
                vectors[i] = row;
            }
        }
        Ok(vectors)
    }

    /// One forward pass over texts already tokenized: pads them to the
    /// longest, pools each over its own tokens, normalises.
    fn forward(&self, batch: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let longest = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * longest);
        let mut mask = Vec::with_capacity(batch.len() * longest);
        for row in batch {
            ids.extend_from_slice(row);
            ids.extend(std::iter::repeat_n(self.pad_id, longest - row.len()));
            mask.extend(std::iter::repeat_n(1u32, row.len()));
            mask.extend(std::iter::repeat_n(0u32, longest - row.len()));
        }
        let device = &self.model.device;
        let ids = Tensor::from_vec(ids, (batch.len(), longest), device)?;
        let mask = Tensor::from_vec(mask, (batch.len(), longest), device)?;
        let token_types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &token_types, Some(&mask))?;
        // Mean over the real tokens only: the pads' vectors are not zero.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let sums = hidden.broadcast_mul(&mask)?.sum(1)?;
        let means = sums.broadcast_div(&mask.sum(1)?)?;
        let norms = means.sqr()?.sum_keepdim(1)?.sqrt()?;
        means.broadcast_div(&norms)?.to_vec2()
    }
}

/// The token limit: see [`Embedder::max_tokens`].
fn max_tokens(
    config: &Config,
    sentence_config: Option<&[u8]>,
    tokenizer: &Tokenizer,
    folder: &Path,
) -> Result<usize, EmbeddingError> {
    let trained = match sentence_config {
        Some(bytes) => serde_json::from_slice::<serde_json::Value>(bytes)
            .map_err(|e| EmbeddingError::BadConfig {
                path: folder.join(SENTENCE_CONFIG),
                reason: e.to_string(),
            })?
            .get("max_seq_length")
            .and_then(serde_json::Value::as_u64)
            .map(|n| n as usize),
        None => None,
    };
    let limit = trained
        .or_else(|| tokenizer.get_truncation().map(|t| t.max_length))
        .unwrap_or(config.max_position_embeddings)
        .min(config.max_position_embeddings);
    if limit < 2 {
        return Err(EmbeddingError::BadConfig {
            path: folder.join(CONFIG),
            reason: format!("a limit of {limit} tokens leaves no room for text"),
        });
    }
    Ok(limit)
}

/// Refuses a sentence-transformers pipeline this module would not
/// reproduce: a module other than the transformer, pooling and
/// normalisation (a dense layer, say), or pooling other than the mean.
fn check_modules(folder: &Path) -> Result<(), EmbeddingError> {
    if let Some(bytes) = read_optional(folder, MODULES)? {
        let path = folder.join(MODULES);
        let modules: Vec<serde_json::Value> = serde_json::from_slice(&bytes)
            .map_err(|e| EmbeddingError::BadConfig { path: path.clone(), reason: e.to_string() })?;
        for module in &modules {
            let kind = module.get("type").and_then(|t| t.as_str()).unwrap_or("?");
            // "sentence_transformers.models.Pooling", or a newer path.
            let name = kind.rsplit('.').next().unwrap_or(kind);
            if !["Transformer", "Pooling", "Normalize"].contains(&name) {
                return Err(EmbeddingError::BadConfig {
                    path,
                    reason: format!("module {kind} is not supported"),
                });
            }
        }
    }
    if let Some(bytes) = read_optional(folder, POOLING)? {
        let path = folder.join(POOLING);
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| EmbeddingError::BadConfig { path: path.clone(), reason: e.to_string() })?;
        if value.get("pooling_mode_mean_tokens").and_then(serde_json::Value::as_bool) != Some(true) {
            return Err(EmbeddingError::BadConfig { path, reason: "only mean pooling is supported".into() });
        }
    }
    Ok(())
}

/// See [`Embedder::id`].
fn model_id(
    config: &Config,
    max_tokens: usize,
    config_bytes: &[u8],
    tokenizer_bytes: &[u8],
    sentence_config: Option<&[u8]>,
    weights: &[u8],
) -> String {
    let mut hash = sha1_smol::Sha1::new();
    hash.update(format!("{METHOD}; max tokens {max_tokens}\n").as_bytes());
    let files = [
        (CONFIG, Some(config_bytes)),
        (TOKENIZER, Some(tokenizer_bytes)),
        (SENTENCE_CONFIG, sentence_config),
        (WEIGHTS, Some(weights)),
    ];
    for (name, bytes) in files {
        // Each file's length goes first, so no two sets of files hash alike
        // by moving bytes from one file to the next.
        let length = bytes.map_or("absent".to_owned(), |b| b.len().to_string());
        hash.update(format!("{name} {length}\n").as_bytes());
        hash.update(bytes.unwrap_or_default());
    }
    let family = config.model_type.as_deref().unwrap_or("bert");
    format!("{family}-{}d-{}", config.hidden_size, &hash.digest().to_string()[..16])
}

/// A required file of the model folder, whole.
fn read(folder: &Path, file: &'static str) -> Result<Vec<u8>, EmbeddingError> {
    read_optional(folder, file)?
        .ok_or_else(|| EmbeddingError::MissingFile { folder: folder.to_owned(), file })
}

/// An optional file of the model folder, whole; `None` if it is absent.
fn read_optional(folder: &Path, file: &str) -> Result<Option<Vec<u8>>, EmbeddingError> {
    let path = folder.join(file);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EmbeddingError::Read { path, reason: e.to_string() }),
    }
}

/// An error's text on one line: messages are one line each, and some
/// library errors carry several.
fn one_line(error: impl std::fmt::Display) -> String {
    error.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
}

impl crate::Encoder for Embedder {
    fn model(&self) -> &str {
        &self.id
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error + Send + Sync>> {
        Ok(self.embed(texts)?)
    }
}
