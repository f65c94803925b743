//! The Python types `sandbox_reclaim/_native.pyi` declares for what crosses
//! as a plain Python object.
//!
//! The stub is generated from this crate (pyo3's `experimental-inspect`,
//! `maturin develop --generate-stubs`): a parameter is declared by its Rust
//! type's `FromPyObject::INPUT_TYPE`, a result by `IntoPyObject::OUTPUT_TYPE`,
//! and the stub imports what those name. A record of the package's own
//! classes, a number the core checks itself or an asyncio future crosses as
//! a `Bound<PyAny>`, which pyo3 can only call `Any`: [`Typed`] is that object
//! with the Python type ([`Hint`]) the stub declares for it. (A string in
//! `#[pyo3(signature = (x: "..."))]` would be written out quoted, with
//! nothing imported for the names in it.)
//!
//! A [`Hint`] is either a marker naming a Python type (`SandboxInstanceRecord`,
//! `Int`, ...) or a Rust type standing for the Python type pyo3 converts it
//! to (`String`: `str`, `Vec<H>`: `list[H]`, `Option<H>`: `H | None`, tuples,
//! `()`: `None`), so `Awaitable<'py, Vec<(String, String, u64)>>` reads as
//! the value the awaitable resolves to.

use std::convert::Infallible;
use std::marker::PhantomData;
use std::ops::Deref;

use pyo3::inspect::{PyStaticConstant, PyStaticExpr, PyStaticOperator};
use pyo3::prelude::*;
use pyo3::type_object::PyTypeCheck;
use pyo3::{type_hint_identifier as name, type_hint_subscript as subscript};

/// A Python type, as the stub writes it.
pub trait Hint {
    const HINT: PyStaticExpr;
}

/// A Python object passed as it is (checked as a `T`, as pyo3 checks a
/// `Bound<T>`), declared in the stub as `H`.
pub struct Typed<'py, H, T = PyAny>(Bound<'py, T>, PhantomData<fn() -> H>);

impl<'py, H, T> Typed<'py, H, T> {
    pub fn new(object: Bound<'py, T>) -> Self {
        Self(object, PhantomData)
    }

    pub fn into_inner(self) -> Bound<'py, T> {
        self.0
    }
}

impl<'py, H, T> Deref for Typed<'py, H, T> {
    type Target = Bound<'py, T>;

    fn deref(&self) -> &Bound<'py, T> {
        &self.0
    }
}

impl<'a, 'py, H: Hint, T: PyTypeCheck + 'a> FromPyObject<'a, 'py> for Typed<'py, H, T> {
    type Error = PyErr;

    const INPUT_TYPE: PyStaticExpr = H::HINT;

    fn extract(object: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self::new(object.cast::<T>()?.to_owned()))
    }
}

impl<'py, H: Hint, T> IntoPyObject<'py> for Typed<'py, H, T> {
    type Target = T;
    type Output = Bound<'py, T>;
    type Error = Infallible;

    const OUTPUT_TYPE: PyStaticExpr = H::HINT;

    fn into_pyobject(self, _py: Python<'py>) -> Result<Bound<'py, T>, Infallible> {
        Ok(self.0)
    }
}

/// The asyncio future [`crate::bridge::awaitable`] answers, resolving to an
/// `H`. Like every [`Typed`], `H` is declared next to the code, not derived
/// from it: it must say what that code builds (here the `convert` closure).
pub type Awaitable<'py, H> = Typed<'py, AwaitableOf<H>>;

const NONE: PyStaticExpr = PyStaticExpr::Constant { value: PyStaticConstant::None };
const ELLIPSIS: PyStaticExpr = PyStaticExpr::Constant { value: PyStaticConstant::Ellipsis };

/// Declares markers: types never built, each naming a Python type.
macro_rules! markers {
    ($($(#[$doc:meta])* $marker:ident = $hint:expr;)*) => {$(
        $(#[$doc])*
        pub enum $marker {}

        impl Hint for $marker {
            const HINT: PyStaticExpr = $hint;
        }
    )*};
}

markers! {
    /// `typing.Any`.
    Any = name!("typing", "Any");
    /// `object`: anything (what the core's own checks accept or refuse).
    Object = name!("builtins", "object");
    /// `int`: a number the core checks itself (type and range).
    Int = name!("builtins", "int");
    /// `float`: seconds the core checks itself (an `int` passes too).
    Float = name!("builtins", "float");
    /// `Exception`, as `sandbox_reclaim/_errors.py`'s classes are.
    Exception = name!("builtins", "Exception");

    // The record classes generated into `sandbox_reclaim/_records.py`.
    /// `SandboxInstanceRecord`.
    SandboxInstanceRecord = name!("sandbox_reclaim._records", "SandboxInstanceRecord");
    /// `NewLeak`.
    NewLeak = name!("sandbox_reclaim._records", "NewLeak");
    /// `LeakEntry`.
    LeakEntry = name!("sandbox_reclaim._records", "LeakEntry");
    /// `DueLeak`.
    DueLeak = name!("sandbox_reclaim._records", "DueLeak");
    /// `AuditEntry`.
    AuditEntry = name!("sandbox_reclaim._records", "AuditEntry");

    // What the asyncio driver (`sandbox_reclaim/_driver.py`) hands over.
    /// A flow's batch (`_host_calls.Batch`): `tuple[typing.Any, ...]`.
    Batch = subscript!(name!("builtins", "tuple"), name!("typing", "Any"), ELLIPSIS);
    /// `_host_answers.error_message`: `Callable[[BaseException], str]`.
    ErrorMessage = subscript!(
        name!("collections.abc", "Callable"),
        PyStaticExpr::List { elts: &[name!("builtins", "BaseException")] },
        name!("builtins", "str")
    );
    /// `_host_answers.instance_fields`: `Callable[[object], tuple[str, str]]`.
    InstanceFields = subscript!(
        name!("collections.abc", "Callable"),
        PyStaticExpr::List { elts: &[name!("builtins", "object")] },
        subscript!(name!("builtins", "tuple"), name!("builtins", "str"), name!("builtins", "str"))
    );
    /// The driver's clock, epoch milliseconds: `Callable[[], int]`.
    Clock = subscript!(
        name!("collections.abc", "Callable"),
        PyStaticExpr::List { elts: &[] },
        name!("builtins", "int")
    );
    /// `Host.provided` (each op's methods): `Mapping[str, Sequence[typing.Any]]`.
    ProvidedMethods = subscript!(
        name!("collections.abc", "Mapping"),
        name!("builtins", "str"),
        subscript!(name!("collections.abc", "Sequence"), name!("typing", "Any"))
    );
    /// `Host.store` (each op's store method): `Mapping[str, typing.Any]`.
    StoreMethods = subscript!(name!("collections.abc", "Mapping"), name!("builtins", "str"), name!("typing", "Any"));
    /// What `__await__` answers: `Generator[typing.Any, None, Batch]` (the batch is `await`'s value).
    AwaitBatch = subscript!(name!("collections.abc", "Generator"), name!("typing", "Any"), NONE, Batch::HINT);
}

/// `collections.abc.Awaitable[H]`.
pub struct AwaitableOf<H>(PhantomData<H>);

impl<H: Hint> Hint for AwaitableOf<H> {
    const HINT: PyStaticExpr = subscript!(name!("collections.abc", "Awaitable"), H::HINT);
}

/// `type[H]`.
pub struct TypeOf<H>(PhantomData<H>);

impl<H: Hint> Hint for TypeOf<H> {
    const HINT: PyStaticExpr = subscript!(name!("builtins", "type"), H::HINT);
}

/// `A | B`.
pub struct Or<A, B>(PhantomData<(A, B)>);

impl<A: Hint, B: Hint> Hint for Or<A, B> {
    const HINT: PyStaticExpr = PyStaticExpr::BinOp { left: &A::HINT, op: PyStaticOperator::BitOr, right: &B::HINT };
}

/// `dict[K, V]`.
pub struct Dict<K, V>(PhantomData<(K, V)>);

impl<K: Hint, V: Hint> Hint for Dict<K, V> {
    const HINT: PyStaticExpr = subscript!(name!("builtins", "dict"), K::HINT, V::HINT);
}

/// `typing.List[H]`: `list[H]` in a class with a method named `list`, where
/// a type checker would read `list` as that method.
pub struct TypingList<H>(PhantomData<H>);

impl<H: Hint> Hint for TypingList<H> {
    const HINT: PyStaticExpr = subscript!(name!("typing", "List"), H::HINT);
}

// Rust types, as the Python types pyo3 converts them to.

impl Hint for String {
    const HINT: PyStaticExpr = name!("builtins", "str");
}

impl Hint for bool {
    const HINT: PyStaticExpr = name!("builtins", "bool");
}

macro_rules! ints {
    ($($int:ty),*) => {$(
        impl Hint for $int {
            const HINT: PyStaticExpr = name!("builtins", "int");
        }
    )*};
}

ints!(i32, i64, u32, u64);

/// What a function returning nothing answers: `None`.
impl Hint for () {
    const HINT: PyStaticExpr = NONE;
}

impl<H: Hint> Hint for Option<H> {
    const HINT: PyStaticExpr = PyStaticExpr::BinOp { left: &H::HINT, op: PyStaticOperator::BitOr, right: &NONE };
}

impl<H: Hint> Hint for Vec<H> {
    const HINT: PyStaticExpr = subscript!(name!("builtins", "list"), H::HINT);
}

impl<A: Hint, B: Hint> Hint for (A, B) {
    const HINT: PyStaticExpr = subscript!(name!("builtins", "tuple"), A::HINT, B::HINT);
}

impl<A: Hint, B: Hint, C: Hint> Hint for (A, B, C) {
    const HINT: PyStaticExpr = subscript!(name!("builtins", "tuple"), A::HINT, B::HINT, C::HINT);
}

impl<A: Hint, B: Hint, C: Hint, D: Hint> Hint for (A, B, C, D) {
    const HINT: PyStaticExpr = subscript!(name!("builtins", "tuple"), A::HINT, B::HINT, C::HINT, D::HINT);
}

impl<A: Hint, B: Hint, C: Hint, D: Hint, E: Hint> Hint for (A, B, C, D, E) {
    const HINT: PyStaticExpr = subscript!(name!("builtins", "tuple"), A::HINT, B::HINT, C::HINT, D::HINT, E::HINT);
}
