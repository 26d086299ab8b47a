//! cq verbs objects.
