//! Content that looks like a secret: private key blocks and the well-known
//! formats of cloud and API tokens. Memory is read back into prompts,
//! synced through git and shown in editors, so a secret written into it
//! leaks far; such a write is refused unless the store allows it.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

/// Each kind of secret and the pattern that finds it.
const PATTERNS: &[(&str, &str)] = &[
    ("private key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
    ("AWS access key id", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"),
    ("AWS secret access key", r#"(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}"#),
    ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})\b"),
    ("GitLab token", r"\bglpat-[A-Za-z0-9_\-]{20}\b"),
    ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("Stripe secret key", r"\b[rs]k_live_[A-Za-z0-9]{24,}"),
    ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("Anthropic API key", r"\bsk-ant-[a-z]+\d*-[A-Za-z0-9_\-]{40,}"),
    (
        "OpenAI API key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}|\bsk-proj-[A-Za-z0-9_\-]{40,}",
    ),
    ("npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
];

static COMPILED: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    PATTERNS
        .iter()
        .map(|(kind, pattern)| (*kind, Regex::new(pattern).expect("secret patterns compile")))
        .collect()
});

/// What else looks like a secret in text memtree only shows (transcripts),
/// where masking too much costs little: whole key blocks, older API key
/// formats, and the values of `password=`, `token:`, `Bearer …`.
const MASKED_TOO: &[(&str, &str)] = &[
    (
        "private key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
    ),
    ("API key", r"\bsk-[A-Za-z0-9_\-]{32,}"),
    ("bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{16,}=*"),
    (
        "password",
        r#"(?i)\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)\b["']?\s*[:=]\s*["']?[^\s"'&;,]{6,}"#,
    ),
];

static MASKS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    MASKED_TOO
        .iter()
        .chain(PATTERNS)
        .map(|(kind, pattern)| (*kind, Regex::new(pattern).expect("mask patterns compile")))
        .collect()
});

/// `text` with everything that looks like a secret replaced by
/// `[masked <kind>]`.
pub fn mask(text: &str) -> std::borrow::Cow<'_, str> {
    let mut out = std::borrow::Cow::Borrowed(text);
    for (kind, regex) in MASKS.iter() {
        if regex.is_match(&out) {
            out = std::borrow::Cow::Owned(regex.replace_all(&out, format!("[masked {kind}]")).into_owned());
        }
    }
    out
}

/// Every secret-looking string in `text`, with its kind.
fn find(text: &str) -> Vec<(&'static str, &str)> {
    COMPILED
        .iter()
        .flat_map(|(kind, regex)| regex.find_iter(text).map(move |m| (*kind, m.as_str())))
        .collect()
}

/// The kind of the first secret `new` holds that `old` did not: a document
/// that already held one (written by hand, or while allowed) can still be
/// edited elsewhere.
pub fn added(old: &str, new: &str) -> Option<&'static str> {
    let found = find(new);
    if found.is_empty() {
        return None;
    }
    let before: HashSet<&str> = find(old).into_iter().map(|(_, s)| s).collect();
    found.into_iter().find(|(_, s)| !before.contains(s)).map(|(kind, _)| kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masking_hides_every_kind_and_keeps_the_rest() {
        let text = "key AKIAQ3EGRTV7XK2PLM5N and ghp_X8XnfCEjRw456fLoewD91ezO35pSneocTOpV, \
                    sk-RlclPEm3w2UtaDzmwDh364dDhBibSdXvXFweq8XYkxRsTusj\n\
                    psql \"host=db password=Pg-dev-7731-hunter2\"\nAuthorization: Bearer abcdefghijklmnop1234\n\
                    -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----\nafter";
        let masked = mask(text);
        for secret in
            ["AKIAQ3EG", "ghp_X8X", "sk-Rlcl", "hunter2", "abcdefghijklmnop1234", "b3BlbnNzaC1rZXktdjE"]
        {
            assert!(!masked.contains(secret), "{secret} in {masked}");
        }
        assert!(masked.contains("key [masked AWS access key id] and [masked GitHub token]"), "{masked}");
        assert!(masked.ends_with("[masked private key]\nafter"), "{masked}");
        assert!(matches!(mask("nothing here"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn well_known_formats_are_found_with_their_kind() {
        let cases = [
            ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "private key"),
            ("-----BEGIN OPENSSH PRIVATE KEY-----", "private key"),
            ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "private key"),
            ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AWS access key id"),
            ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS secret access key"),
            ("token: ghp_1234567890abcdefghijABCDEFGHIJ123456", "GitHub token"),
            ("glpat-abcdefghij0123456789", "GitLab token"),
            ("xoxb-1234567890-abcdefghij", "Slack token"),
            ("sk_live_abcdefghijklmnopqrstuvwx", "Stripe secret key"),
            ("key=AIzaSyA1234567890abcdefghijklmnopqrstuv", "Google API key"),
            (&format!("sk-ant-api03-{}", "a".repeat(90)), "Anthropic API key"),
            (&format!("sk-proj-{}", "b".repeat(60)), "OpenAI API key"),
            ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm token"),
        ];
        for (text, kind) in cases {
            assert_eq!(added("", text), Some(kind), "{text}");
        }
    }

    #[test]
    fn ordinary_notes_and_secrets_already_there_pass() {
        for text in [
            "The public key is in ~/.ssh/id_ed25519.pub; BEGIN and END markers are PEM.",
            "Use AKIA-style ids only in examples; rotate keys every 90 days.",
            "sk-learn is a library; the ghp_ prefix marks GitHub tokens.",
            "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
        ] {
            assert_eq!(added("", text), None, "{text}");
        }
        let old = "key: AKIAIOSFODNN7EXAMPLE\n";
        assert_eq!(added(old, &format!("{old}more notes\n")), None);
        assert_eq!(added(old, &format!("{old}AKIAIOSFODNN7EXAMPL2\n")), Some("AWS access key id"));
    }
}
