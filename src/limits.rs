//! duroxide's limits, exported from the crate so they are never retyped.

use duroxide::runtime::limits;
use napi_derive::napi;

#[napi]
pub const MAX_WORKER_TAGS: u32 = limits::MAX_WORKER_TAGS as u32;
#[napi]
pub const MAX_TAG_NAME_BYTES: u32 = limits::MAX_TAG_NAME_BYTES as u32;
#[napi]
pub const MAX_KV_KEYS: u32 = limits::MAX_KV_KEYS as u32;
#[napi]
pub const MAX_KV_VALUE_BYTES: u32 = limits::MAX_KV_VALUE_BYTES as u32;
#[napi]
pub const MAX_CUSTOM_STATUS_BYTES: u32 = limits::MAX_CUSTOM_STATUS_BYTES as u32;
