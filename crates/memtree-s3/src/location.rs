//! `s3://BUCKET/PREFIX`: which bucket, and which folder of it, holds a store.

/// A store's place in object storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    pub bucket: String,
    /// The store's folder in the bucket, without a trailing `/`; empty: the
    /// bucket's top.
    pub prefix: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LocationError {
    #[error("{0:?} is not an S3 location such as s3://bucket/folder")]
    NotS3(String),
    #[error("{0:?} names no bucket")]
    NoBucket(String),
    #[error("{text:?}: {what}")]
    Invalid { text: String, what: &'static str },
}

impl S3Location {
    /// Parses `s3://BUCKET[/PREFIX]`; `None` for anything that is not an
    /// S3 URL (a local path).
    pub fn parse(text: &str) -> Option<Result<S3Location, LocationError>> {
        let rest = text.strip_prefix("s3://")?;
        Some(Self::parse_rest(text, rest))
    }

    fn parse_rest(text: &str, rest: &str) -> Result<S3Location, LocationError> {
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(LocationError::NoBucket(text.to_owned()));
        }
        // S3's bucket naming rules, loosely: what a URL host may hold.
        let valid_bucket = bucket.len() >= 3
            && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.".contains(&b));
        if !valid_bucket {
            return Err(LocationError::Invalid {
                text: text.to_owned(),
                what: "a bucket name is 3 or more of a-z, 0-9, - and .",
            });
        }
        let prefix = prefix.trim_end_matches('/');
        if prefix.split('/').any(|part| part.is_empty() || part == "." || part == "..") && !prefix.is_empty()
        {
            return Err(LocationError::Invalid {
                text: text.to_owned(),
                what: "a folder has no empty, . or .. part",
            });
        }
        Ok(S3Location { bucket: bucket.to_owned(), prefix: prefix.to_owned() })
    }
}

impl std::fmt::Display for S3Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.prefix.is_empty() {
            true => write!(f, "s3://{}", self.bucket),
            false => write!(f, "s3://{}/{}", self.bucket, self.prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_s3_url_names_a_bucket_and_a_folder() {
        let at = |t: &str| S3Location::parse(t).map(|r| r.map(|l| (l.bucket, l.prefix)));
        assert_eq!(at("s3://team-mem/agents/"), Some(Ok(("team-mem".into(), "agents".into()))));
        assert_eq!(at("s3://team-mem"), Some(Ok(("team-mem".into(), String::new()))));
        assert_eq!(at("s3://team.mem/a/b"), Some(Ok(("team.mem".into(), "a/b".into()))));
        assert_eq!(at("/home/me/memory"), None, "a local path");
        assert_eq!(at("s3:///x"), Some(Err(LocationError::NoBucket("s3:///x".into()))));
        assert!(matches!(at("s3://Team/x"), Some(Err(LocationError::Invalid { .. }))));
        assert!(matches!(at("s3://team/a//b"), Some(Err(LocationError::Invalid { .. }))));
        assert!(matches!(at("s3://team/../b"), Some(Err(LocationError::Invalid { .. }))));
        assert_eq!(S3Location::parse("s3://team/a/").unwrap().unwrap().to_string(), "s3://team/a");
    }
}
