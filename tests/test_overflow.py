"""mha_kit.overflow against hand-worked values and a brute-force optimum."""
import numpy as np
import pytest

import mha_kit as mk


def test_utilisation_hand_values():
    # demand 1 then 3 tokens/s, one token/s per replica: the first replica is always busy,
    # the second and third only in the second period
    u = mk.stacked_replica_utilisation(np.array([1.0, 3.0]), 1.0, 3)
    assert u.tolist() == [1.0, 0.5, 0.5]
    # a partial band: demand 1.5 fills half of the second replica
    assert mk.stacked_replica_utilisation(np.array([1.5]), 1.0, 2).tolist() == [1.0, 0.5]


def test_cost_hand_value():
    # one owned replica at $1/h for two 1-hour periods, overflow of 2 tokens/s for an hour = 7,200
    # tokens at $1/3,600 each = $2
    cost = mk.owned_plus_api_cost(np.array([1.0, 3.0]), 1.0, 1, 1.0, 1e6 / 3600)
    assert cost == pytest.approx(2.0 + 2.0)
    # no owned replica: everything on the API, 4 tokens/s for an hour
    assert mk.owned_plus_api_cost(np.array([1.0, 3.0]), 1.0, 0, 1.0, 1e6 / 3600) == pytest.approx(4.0)


def test_marginal_rule_matches_brute_force():
    hours = np.arange(24)
    demand = 100.0 * (5 - 3 * np.cos(2 * np.pi * hours / 24))  # 2 to 8 replicas' worth at 100 tok/s each
    cap, price = 100.0, 3.0
    for api in (5.0, 10.0, 20.0, 40.0):
        costs = [mk.owned_plus_api_cost(demand, cap, k, price, api) for k in range(0, 10)]
        best = int(np.argmin(costs))
        full_use = price / (cap * 3600) * 1e6  # dollars per million tokens of a replica busy all day
        u = mk.stacked_replica_utilisation(demand, cap, 9)
        assert best == int(np.sum(u > full_use / api))


def test_errors():
    with pytest.raises(ValueError, match="demand must be"):
        mk.stacked_replica_utilisation(np.array([[1.0]]), 1.0, 1)
    with pytest.raises(ValueError, match="demand must be"):
        mk.owned_plus_api_cost(np.array([-1.0]), 1.0, 1, 1.0, 1.0)
    with pytest.raises(ValueError, match="replica_capacity"):
        mk.stacked_replica_utilisation(np.array([1.0]), 0.0, 1)
    with pytest.raises(ValueError, match="replicas"):
        mk.stacked_replica_utilisation(np.array([1.0]), 1.0, 0)
    with pytest.raises(ValueError, match="replicas must be an integer >= 0"):
        mk.owned_plus_api_cost(np.array([1.0]), 1.0, -1, 1.0, 1.0)
    with pytest.raises(ValueError, match="api_price_per_million"):
        mk.owned_plus_api_cost(np.array([1.0]), 1.0, 1, 1.0, 0.0)


@pytest.mark.parametrize("bad, shown", [
    (np.array([[1.0]]), "shape (1, 1)"),
    (np.array([]), "shape (0,) with min None and max None"),
    (np.array([1.0, np.nan]), "with min nan"),
    (np.array([1.0, -2.0]), "with min -2.0"),
    (np.array([1.0, np.inf]), "with min 1.0 and max inf"),
    (["a", "b"], "not numeric"),
    ([1.0, None], "with min nan")  # None becomes nan,
])
def test_demand_errors_name_demand_and_the_value(bad, shown):
    for call in (lambda: mk.stacked_replica_utilisation(bad, 1.0, 1),
                 lambda: mk.owned_plus_api_cost(bad, 1.0, 1, 1.0, 1.0)):
        with pytest.raises(ValueError, match="demand must be") as err:
            call()
        assert shown in str(err.value)


def test_scalar_argument_errors():
    d = np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="replica_capacity must be a positive number"):
        mk.stacked_replica_utilisation(d, 0.0, 1)
    with pytest.raises(ValueError, match="replicas"):
        mk.stacked_replica_utilisation(d, 1.0, 0)
    with pytest.raises(ValueError, match=r"replicas must be an integer >= 0, got -1"):
        mk.owned_plus_api_cost(d, 1.0, -1, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"replicas must be an integer >= 0, got 1.5"):
        mk.owned_plus_api_cost(d, 1.0, 1.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="replica_cost_per_hour must be a positive number"):
        mk.owned_plus_api_cost(d, 1.0, 1, 0.0, 1.0)
    with pytest.raises(ValueError, match="api_price_per_million must be a positive number"):
        mk.owned_plus_api_cost(d, 1.0, 1, 1.0, -1.0)
    with pytest.raises(ValueError, match="hours_per_period must be a positive number"):
        mk.owned_plus_api_cost(d, 1.0, 1, 1.0, 1.0, hours_per_period=0)
