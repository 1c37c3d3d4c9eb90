#pragma once
// magpie/core/detail/signature.hpp — what fork can know about a callable's parameters, and the
// rule that keeps a forked child's reference parameters from dangling.
//
// A forked child runs while its parent's continuation may be stolen and resumed elsewhere; the
// parent's full-expression `co_await fork(...)` then ends, and every temporary in it dies, while
// the child still runs. So a child's reference parameter must bind directly to an object that
// outlives the join (an lvalue in the parent's frame or beyond), never to a temporary — neither
// to a prvalue/xvalue argument nor to one materialised by a conversion. By-value parameters are
// always safe: the coroutine copies them into its frame before fork returns control. `call` has
// no such problem (the parent cannot move on before the child returns).

#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>

namespace magpie::core::detail {

template <typename... P>
struct type_list {};

/// The declared parameters of a callable, when they can be known: `known` is false for
/// overloaded or template call operators that the arguments cannot pin down.
/// `implicit_object` is true when the callable is a member function pointer whose first argument
/// is the object (a reference parameter in all but name).
template <typename Sig>
struct signature_of {
  static constexpr bool known = false;
};
template <typename R, typename... P>
struct signature_of<R (*)(P...)> {
  static constexpr bool known = true;
  static constexpr bool member = false;
  using params = type_list<P...>;
};
template <typename R, typename... P>
struct signature_of<R (*)(P...) noexcept> : signature_of<R (*)(P...)> {};

// Member functions: a call operator (the object is the callable itself) or a member function
// pointer (the object is the first argument). Every cv/ref/noexcept variant maps to the plain one.
template <typename R, typename... P>
struct member_signature {
  static constexpr bool known = true;
  static constexpr bool member = true;
  using params = type_list<P...>;
};
#define MAGPIE_DETAIL_MEMBER_SIGNATURE(QUALIFIERS)                                                 \
  template <typename R, typename C, typename... P>                                                 \
  struct signature_of<R (C::*)(P...) QUALIFIERS> : member_signature<R, P...> {};
MAGPIE_DETAIL_MEMBER_SIGNATURE()
MAGPIE_DETAIL_MEMBER_SIGNATURE(const)
MAGPIE_DETAIL_MEMBER_SIGNATURE(&)
MAGPIE_DETAIL_MEMBER_SIGNATURE(const &)
MAGPIE_DETAIL_MEMBER_SIGNATURE(&&)
MAGPIE_DETAIL_MEMBER_SIGNATURE(const &&)
MAGPIE_DETAIL_MEMBER_SIGNATURE(noexcept)
MAGPIE_DETAIL_MEMBER_SIGNATURE(const noexcept)
MAGPIE_DETAIL_MEMBER_SIGNATURE(& noexcept)
MAGPIE_DETAIL_MEMBER_SIGNATURE(const & noexcept)
MAGPIE_DETAIL_MEMBER_SIGNATURE(&& noexcept)
MAGPIE_DETAIL_MEMBER_SIGNATURE(const && noexcept)
#undef MAGPIE_DETAIL_MEMBER_SIGNATURE

/// How `fn(args...)` reaches the coroutine: through a function (pointer), a member function
/// pointer applied to the first argument, or an object's call operator.
enum class callable_form : unsigned char { function, member_pointer, call_operator, unknown };

template <typename Fn>
consteval callable_form form_of() {
  using F = std::remove_cvref_t<Fn>;
  if constexpr (std::is_function_v<F> ||
                (std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>)) {
    return callable_form::function;
  } else if constexpr (std::is_member_function_pointer_v<F>) {
    return callable_form::member_pointer;
  } else if constexpr (std::is_class_v<F>) {
    return callable_form::call_operator;
  } else {
    return callable_form::unknown;
  }
}

/// The signature that `fn(args...)` calls, or an unknown one.
template <typename Fn, typename... Args>
consteval auto call_signature() {
  using F = std::remove_cvref_t<Fn>;
  constexpr callable_form form = form_of<Fn>();
  if constexpr (form == callable_form::function) {
    return signature_of<std::decay_t<F>>{};
  } else if constexpr (form == callable_form::member_pointer) {
    return signature_of<F>{};
  } else if constexpr (form == callable_form::call_operator) {
    if constexpr (requires { &F::operator(); }) { // one non-template call operator
      return signature_of<decltype(&F::operator())>{};
    } else if constexpr (requires { &F::template operator()<Args...>; }) {
      // A generic lambda whose template parameters are its `auto` parameters, in order: naming
      // the specialisation with the arguments' forwarding types gives the parameters that
      // deduction would give (`auto const &` and `auto &&` stay references, `auto` stays a value).
      return signature_of<decltype(&F::template operator()<Args...>)>{};
    } else {
      return signature_of<void>{};
    }
  } else {
    return signature_of<void>{};
  }
}

/// Whether a parameter of type P, initialised from an argument whose forwarding type is A, refers
/// to an object that lives as long as the argument's referent: true for by-value parameters (the
/// coroutine copies them into its frame), and for reference parameters bound directly to an
/// lvalue (same type, a base, or more cv-qualified). False when a reference binds to a temporary:
/// an rvalue argument, or an lvalue that must be converted first.
template <typename P, typename A>
inline constexpr bool binds_safely =
    !std::is_reference_v<P> ||
    (std::is_lvalue_reference_v<A> &&
     std::is_convertible_v<std::remove_reference_t<A> *, std::remove_reference_t<P> *>);

/// The verdict on `fork(fn, args...)`'s arguments.
enum class fork_args_verdict : unsigned char {
  safe,
  temporary_callable,   ///< an object with state (a lambda's captures) passed as a temporary
  temporary_object,     ///< a member function's object passed as a temporary
  reference_to_temp,    ///< a reference parameter bound to a temporary
  default_reference,    ///< a defaulted reference parameter: its default is a temporary
  unknown_with_rvalues, ///< parameters unknown, and some argument is a temporary
};

template <std::size_t I, typename T, typename... Rest>
struct nth_type : nth_type<I - 1, Rest...> {};
template <typename T, typename... Rest>
struct nth_type<0, T, Rest...> {
  using type = T;
};

template <typename T>
inline constexpr bool always_false_v = false;

/// Instantiated only when parameter number `Parameter` (counted from 1) of a forked child, of
/// type ParameterType, would bind to a temporary made from an argument of type ArgumentType: the
/// compiler's note on this instantiation names all three.
template <std::size_t Parameter, typename ParameterType, typename ArgumentType>
consteval void forked_reference_parameter_binds_to_a_temporary() {
  static_assert(always_false_v<ParameterType>,
                "magpie::fork: a reference parameter of the child would bind to a temporary (an "
                "rvalue argument, or an lvalue that needs a conversion), which dies when the "
                "parent's continuation is stolen while the child runs. The template arguments "
                "of forked_reference_parameter_binds_to_a_temporary<N, P, A> name it: parameter "
                "number N (from 1), of type P, given an argument of type A. Pass an lvalue of the "
                "parameter's type that outlives the join, or take the parameter by value");
}

/// The index of the first parameter of `P...` that would bind to a temporary made from its
/// argument in `A...` (sizeof...(A) >= 1 of them), or sizeof...(A) if none would.
template <typename... P, typename... A, std::size_t... I>
consteval std::size_t first_unsafe_binding(type_list<P...>, type_list<A...>,
                                           std::index_sequence<I...>) {
  bool const safe[] = {binds_safely<typename nth_type<I, P...>::type, A>...};
  for (std::size_t i = 0; i < sizeof...(A); ++i) {
    if (!safe[i]) {
      return i;
    }
  }
  return sizeof...(A);
}

template <typename... P, typename... A>
consteval fork_args_verdict check_parameters(type_list<P...>, type_list<A...>) {
  constexpr std::size_t np = sizeof...(P);
  constexpr std::size_t na = sizeof...(A);
  if constexpr (np < na) {
    return fork_args_verdict::safe; // cannot be called so; the call's own check reports it
  } else if constexpr (np == 0) {
    return fork_args_verdict::safe; // nothing to bind (and Clang rejects nth_type<I> with no P)
  } else {
    constexpr bool is_ref[] = {std::is_reference_v<P>..., false};
    for (std::size_t i = na; i < np; ++i) {
      if (is_ref[i]) {
        return fork_args_verdict::default_reference;
      }
    }
    constexpr std::size_t bad = na == 0 ? 0
                                        : first_unsafe_binding(type_list<P...>{}, type_list<A...>{},
                                                               std::make_index_sequence<na>{});
    if constexpr (bad == na) {
      return fork_args_verdict::safe;
    } else {
      forked_reference_parameter_binds_to_a_temporary<bad + 1, typename nth_type<bad, P...>::type,
                                                      typename nth_type<bad, A...>::type>();
      return fork_args_verdict::reference_to_temp;
    }
  }
}

template <typename T>
inline constexpr bool is_reference_wrapper_v = false;
template <typename T>
inline constexpr bool is_reference_wrapper_v<std::reference_wrapper<T>> = true;

template <typename Sig, typename Obj, typename... Rest>
consteval fork_args_verdict check_member_call() {
  using O = std::remove_cvref_t<Obj>;
  if constexpr (!std::is_lvalue_reference_v<Obj> && !std::is_pointer_v<O> &&
                !is_reference_wrapper_v<O>) {
    return fork_args_verdict::temporary_object;
  } else {
    return check_parameters(typename Sig::params{}, type_list<Rest...>{});
  }
}

/// Whether `fork(fn, args...)` may leave the child referring to a temporary of the parent's
/// full-expression (see the top of this file). Decided at compile time from the forwarding types.
template <typename Fn, typename... Args>
consteval fork_args_verdict check_fork_args() {
  using F = std::remove_cvref_t<Fn>;
  constexpr callable_form form = form_of<Fn>();
  using sig = decltype(call_signature<Fn, Args...>());
  if constexpr (form == callable_form::call_operator && !std::is_lvalue_reference_v<Fn> &&
                !std::is_empty_v<F>) {
    return fork_args_verdict::temporary_callable; // the coroutine keeps `this`: the temporary
  } else if constexpr (!sig::known) {
    return (std::is_lvalue_reference_v<Args> && ...) ? fork_args_verdict::safe
                                                     : fork_args_verdict::unknown_with_rvalues;
  } else if constexpr (form == callable_form::member_pointer) {
    if constexpr (sizeof...(Args) == 0) {
      return fork_args_verdict::safe; // not callable; reported elsewhere
    } else {
      return check_member_call<sig, Args...>();
    }
  } else {
    return check_parameters(typename sig::params{}, type_list<Args...>{});
  }
}

} // namespace magpie::core::detail
