//! [`Label`]: an attribute value of an event, cheap to clone.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// A label value: a host key or a route template, never a raw path.
///
/// A route mounted by the macros is labelled by its template, a
/// `&'static str`, and cloning that label copies a pointer. Every other
/// value (a host key, a path axum matched) is shared behind an `Arc`.
/// Either way it reads as a `str`, and two labels are equal when their
/// text is.
///
/// # Examples
///
/// ```
/// use timebox::observe::Label;
///
/// let route = Label::from_static("/users/{id}");
/// let host: Label = "api.internal:443".into();
/// assert_eq!(&*route, "/users/{id}");
/// assert_eq!(host, Label::from("api.internal:443"));
/// ```
#[derive(Clone)]
pub struct Label(Text);

#[derive(Clone)]
enum Text {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Label {
    /// The label `text`, without an allocation.
    #[must_use]
    pub const fn from_static(text: &'static str) -> Self {
        Self(Text::Static(text))
    }

    /// The label's text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Text::Static(text) => text,
            Text::Shared(text) => text,
        }
    }
}

impl Deref for Label {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Label {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Label {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Label {
    fn from(text: &str) -> Self {
        Self(Text::Shared(text.into()))
    }
}

impl From<String> for Label {
    fn from(text: String) -> Self {
        Self(Text::Shared(text.into()))
    }
}

impl From<Arc<str>> for Label {
    fn from(text: Arc<str>) -> Self {
        Self(Text::Shared(text))
    }
}

impl PartialEq for Label {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Label {}

impl PartialEq<str> for Label {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Label {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Hash for Label {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Label;

    #[test]
    fn a_static_and_a_shared_label_of_one_text_are_equal() {
        let route = Label::from_static("/users/{id}");
        assert_eq!(route, Label::from("/users/{id}"));
        assert_eq!(route, "/users/{id}");
        assert_eq!(route.to_string(), "/users/{id}");
        assert_eq!(format!("{route:?}"), r#""/users/{id}""#);
    }
}
