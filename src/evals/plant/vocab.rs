//! The words planted facts are made of: keys, value parts, and the fact kinds paraphrased
//! questions are drawn from (with the sibling keys their distractors use).

use crate::evalspec::needle::{MAX_FACTS, PARAPHRASE_KINDS};

pub(super) const KEYS: [&str; MAX_FACTS] = [
    "deploy token",
    "staging database password",
    "release codename",
    "on-call pager id",
    "feature flag secret",
    "backup bucket suffix",
    "license activation code",
    "vpn pre-shared phrase",
    "canary cluster tag",
    "audit ticket handle",
    "build cache salt",
    "signing key alias",
    "metrics namespace tag",
    "migration batch label",
    "incident bridge code",
    "vault unseal hint",
];
pub(super) const ADJECTIVES: [&str; 24] = [
    "teal", "amber", "crimson", "silent", "brisk", "hollow", "velvet", "frosty", "gilded",
    "rustic", "lunar", "mellow", "nimble", "obsidian", "placid", "quartz", "rapid", "sable",
    "tawny", "umber", "vivid", "woolly", "zesty", "cobalt",
];
pub(super) const ANIMALS: [&str; 24] = [
    "otter", "heron", "lynx", "marmot", "ibis", "gecko", "bison", "falcon", "newt", "tapir",
    "walrus", "yak", "quokka", "raven", "stoat", "viper", "wombat", "egret", "ferret", "koala",
    "lemur", "moose", "okapi", "puffin",
];

/// A fact kind for paraphrased questions: the planted key, ways to ask for it that avoid the
/// key's words as a phrase, and sibling keys that share part of it (the distractors).
pub(super) struct Kind {
    pub(super) key: &'static str,
    pub(super) paraphrases: [&'static str; 2],
    pub(super) siblings: [&'static str; 2],
}

pub(super) const KINDS: [Kind; PARAPHRASE_KINDS] = [
    Kind {
        key: "staging deploy token",
        paraphrases: [
            "token we deploy staging with",
            "credential our staging deploys use",
        ],
        siblings: ["production deploy token", "staging read token"],
    },
    Kind {
        key: "primary database password",
        paraphrases: [
            "password of the main database",
            "password for logging into our primary db",
        ],
        siblings: ["replica database password", "primary cache password"],
    },
    Kind {
        key: "next release codename",
        paraphrases: [
            "name we gave the upcoming release",
            "codename of the release after this one",
        ],
        siblings: ["previous release codename", "next sprint codename"],
    },
    Kind {
        key: "on-call pager id",
        paraphrases: [
            "id of the pager for whoever is on call",
            "pager the on-call engineer carries",
        ],
        siblings: ["backup pager id", "on-call phone id"],
    },
    Kind {
        key: "backup bucket suffix",
        paraphrases: [
            "suffix of the bucket our backups go to",
            "ending of the backups bucket name",
        ],
        siblings: ["logs bucket suffix", "backup volume suffix"],
    },
    Kind {
        key: "canary cluster tag",
        paraphrases: [
            "tag on the cluster that runs canaries",
            "label of the canary deployment cluster",
        ],
        siblings: ["main cluster tag", "canary node tag"],
    },
    Kind {
        key: "signing key alias",
        paraphrases: [
            "alias of the key we sign releases with",
            "name the signing key goes by",
        ],
        siblings: ["encryption key alias", "signing cert alias"],
    },
    Kind {
        key: "incident bridge code",
        paraphrases: [
            "code to join the incident call",
            "dial-in code for the incident bridge line",
        ],
        siblings: ["standup bridge code", "incident room code"],
    },
];
